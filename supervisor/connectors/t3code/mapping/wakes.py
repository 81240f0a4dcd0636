"""A message with a `notification` is a wake (`wake.queued`), carrying for a task the
text handed to the parent (the subagent's `result`, else the notice's `detail`); a
command or monitor notice names no item, so it is matched to the roster entry that left
just before (and whose description its text names). Builds before that field mark a
wake only by who wrote it (`createdBy: agent`, `creationSource: server` or `provider`);
a task's names the task id in its text. Supervisor's own continue of a task is a manual
wake of it.
"""

from __future__ import annotations

import re
from typing import Any

from supervisor.core.contract.connectors import CONTINUE_WAKE_PREFIX

from . import deliveries
from .fields import string
from .ids import item_id
from .memory import KEEP_MESSAGES, StartMessage, bound
from .state import MapState
from .statuses import WAKE_OUTCOMES

# Notification source kinds -> the item kinds they report on (None: any).
NOTICE_KINDS: dict[str, frozenset[str] | None] = {
    "command": frozenset({"command", "other"}),
    "background_command": frozenset({"command", "other"}),
    "monitor": frozenset({"monitor", "other"}),
    "subagent": frozenset({"subagent", "other"}),
    "background_task": None,
}
# Builds before `notification` (J, P006): a wake is a user message the server or the
# provider wrote as the agent (command `provider-continuation:…`); a task's names its id.
TASK_WAKE = re.compile(r"^Delegated tasks? ")
TASK_ID_IN_TEXT = re.compile(r"taskId (\S+?)(?= |\.?$)")
TASK_IDS_LISTED = re.compile(r"^Delegated tasks? (.+?) reached terminal states?\.")
LEGACY_OUTCOME = re.compile(r"\b(completed|ended with status (\w+))\b")


def remember(
    state: MapState,
    p: dict,
    message_id: str,
    thread: str,
    role: Any,
    run: str | None,
    occurred: str | None,
) -> StartMessage | None:
    """What a run started by this message needs to know of it: a notice's wakes and
    whether they were delivered (`[wakes, delivered]`, kept: each notice is read once),
    or "m" (a message) and "s" (a scheduled task's), kept only while no run has it."""
    messages = state.memory.messages
    entry = messages.get(message_id)
    if entry is not None:
        return entry
    notification = p.get("notification")
    if not isinstance(notification, dict) and role == "user":
        notification = legacy_notification(p)
    if isinstance(notification, dict):
        entry = [notice(state, p, notification, thread, occurred), 0]
    elif role == "user" and (wakes := continued(state, p, message_id, thread, occurred)):
        entry = [wakes, 0]  # as a notice: the run it starts or joins names the wake
    elif role == "user":
        entry = "s" if p.get("scheduledTaskId") else "m"
        started = state.importing and message_id in state.started_by
        if run and not started and message_id not in state.memory.pending:
            return entry  # already in a run: no run will name it as new
    else:
        return None  # system messages start no run
    messages[message_id] = entry
    bound(messages, KEEP_MESSAGES)
    return entry


def continued(state: MapState, p: dict, message_id: str, thread: str, occurred: str | None) -> list:
    """Supervisor's continue of a task ([its wake]), or [] for any other message. The
    connector sends it with the continue's manual wake as its message id
    (`supervisor:continue:<key>`): a manual wake of the child's task, so the run it
    starts or joins is the task's (contract §4, rule 5)."""
    task = state.memory.children.get(thread)
    at = state.at(p.get("createdAt"), occurred)
    if not message_id.startswith(CONTINUE_WAKE_PREFIX) or not task or at is None:
        return []
    data = {
        "wake": message_id,
        "thread": thread,
        "source": {"kind": "manual", "task": task},
        "summary": string(p.get("text")) or None,
    }
    state.emit("wake.queued", (message_id,), at, data)
    return [message_id]


def notice(state: MapState, p: dict, notification: dict, thread: str, occurred: str | None) -> list:
    """The wakes a notice queues (their ids), or [] when it is not understood."""
    source = notification.get("source") if isinstance(notification.get("source"), dict) else {}
    kind = source.get("kind")
    at = state.at(p.get("createdAt"), occurred)
    if at is None:
        return []
    outcome = notification.get("outcome")
    if outcome not in WAKE_OUTCOMES:
        if outcome != "unknown":
            state.unknown_value(f"notification.outcome:{outcome}")
        outcome = None
    summary = string(notification.get("summary")) or None
    detail = notification.get("detail") if isinstance(notification.get("detail"), str) else None
    message_id = p["id"]
    if kind == "delegated_task":
        task_ids = [t for t in source.get("taskIds") or [] if isinstance(t, str) and t]
        if not task_ids:
            state.unknown_value("notification.source.taskIds")
            return []
        wakes = []
        for index, task_id in enumerate(task_ids):
            wake = message_id if index == 0 else f"{message_id}#{index + 1}"
            task = state.memory.tasks.get(task_id)
            # The text handed is the result; the notice's summary is only a headline.
            text = (task or {}).get("result") or detail
            child = string(source.get("childThreadId")) or (task or {}).get("child")
            state.emit(
                "wake.queued",
                (wake,),
                at,
                {
                    "wake": wake,
                    "thread": thread,
                    "source": {"kind": "task", "task": task_id, "thread": child},
                    "summary": text,
                    "outcome": outcome,
                },
            )
            wakes.append(wake)
            if task is not None:
                deliveries.task_wake(
                    state, task, wake, message_id, string(p.get("runId")) or None, at
                )
        return wakes
    family = NOTICE_KINDS.get(kind, ...)
    if family is ...:
        state.unknown_value(f"notification.source.kind:{kind}")
        return []
    if kind == "background_task" and source.get("work") == "subagent":
        family = NOTICE_KINDS["subagent"]
    text = " ".join(filter(None, (summary, detail)))
    item = match(state, thread, family, source, text, outcome, at)
    if item is None:
        # No roster entry left before it (it left before an import, or never entered
        # the roster): the notice proves the work existed and ended. It stands as an
        # item of its own, started by the contract's default run (the thread's latest
        # run requested by then).
        item = f"{thread}:bg:notice:{message_id}"
        if outcome != "updated":
            item_kind = item_kind_of(kind, source)
            for event_type in ("background.started", "background.finished"):
                data = {"thread": thread, "item": item}
                if event_type == "background.started":
                    data.update(kind=item_kind, label=summary)
                state.emit(event_type, (item,), at, data)
    state.emit(
        "wake.queued",
        (message_id,),
        at,
        {
            "wake": message_id,
            "thread": thread,
            "source": {"kind": "background", "item": item},
            "summary": summary,
            "outcome": outcome,
        },
    )
    return [message_id]


def match(
    state: MapState,
    thread: str,
    family: frozenset[str] | None,
    source: dict,
    text: str,
    outcome: str | None,
    at: str,
) -> str | None:
    """The item a command, monitor or subagent notice reports on: among the entries
    that left this thread's roster before it (and those still in it), the one whose
    description its text names, else the one that left last."""
    child = string(source.get("childThreadId")) or None
    norm = normalized(text)
    candidates = []
    departed = state.memory.departed.get(thread, [])
    for index, (item, kind, description, entry_child, left) in enumerate(departed):
        if family is not None and kind not in family:
            continue
        candidates.append((item, description, entry_child, 1, left, ("departed", index)))
    # Work still listed (a roster that keeps an entry until its wake run starts)
    # counts only when the notice names it.
    for roster in map(state.memory.rosters.get, state.rosters_of(thread)):
        if not roster or roster["thread"] != thread:
            continue
        for task_id, (kind, description, entry_child) in roster["tasks"].items():
            if (family is None or kind in family) and names(norm, description):
                item = item_id(thread, task_id)
                candidates.append((item, description, entry_child, 0, "", None))
    for native in map(state.memory.natives.get, state.natives_of(thread)):
        if not native or native["thread"] != thread or native["finished"]:
            continue
        if (family is None or "subagent" in family) and names(norm, native.get("title")):
            candidates.append((native["item"], native.get("title"), native["child"], 0, "", None))
    if not candidates:
        return None

    def score(candidate):
        item, description, entry_child, gone, left, _ = candidate
        named = names(norm, description)
        same_child = child is not None and entry_child == child
        # Left at or before the notice beats left after it (clocks aside).
        in_time = gone and left <= at
        return (same_child, named, gone, in_time, left, item)

    best = max(candidates, key=score)
    if child is not None and best[2] not in (None, child):
        return None
    if best[5] is not None and outcome != "updated":
        del departed[best[5][1]]  # one notice per departure
        if not departed:
            del state.memory.departed[thread]
    return best[0]


def legacy_notification(p: dict) -> dict | None:
    """The `notification` a newer build would have written on this message, or None
    when it is not a wake."""
    if p.get("createdBy") != "agent" or p.get("creationSource") not in ("server", "provider"):
        return None
    text = string(p.get("text")).strip()
    if p.get("creationSource") == "server":
        if not TASK_WAKE.match(text):
            return None  # a restart continuation ("Continue where you left off.")
        cohort = p.get("delegatedCompletion")
        named = cohort.get("taskIds") if isinstance(cohort, dict) else None
        # P006 and K33 name the tasks on the message (its cohort); older text only.
        task_ids = [t for t in named if isinstance(t, str) and t] if isinstance(named, list) else []
        task_ids = task_ids or TASK_ID_IN_TEXT.findall(text)
        listed = TASK_IDS_LISTED.match(text)
        if listed and not task_ids:
            task_ids = [t.strip() for t in listed.group(1).split(",")]
        source = {"kind": "delegated_task", "taskIds": list(dict.fromkeys(task_ids))}
    else:
        source = {"kind": "background_task"}
    found = LEGACY_OUTCOME.search(text)
    outcome = (found.group(2) or found.group(1)) if found else "unknown"
    if outcome not in WAKE_OUTCOMES:
        outcome = "cancelled" if outcome == "interrupted" else "unknown"
    return {"source": source, "outcome": outcome, "summary": text}


def item_kind_of(kind: str, source: dict) -> str:
    """The kind of the work a notice with no item reports on."""
    if kind in ("command", "background_command"):
        return "command"
    if kind == "monitor":
        return "monitor"
    if kind == "subagent" or source.get("work") == "subagent":
        return "subagent"
    return "other"


def names(text: str, description: str | None) -> bool:
    """Does the (normalized) notice text name the entry's description?"""
    return bool(description) and normalized(description) in text


def normalized(text: str | None) -> str:
    """Text as matching compares it: whitespace runs as one space, case folded."""
    return " ".join((text or "").split()).casefold()
