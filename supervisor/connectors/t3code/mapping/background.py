"""A `provider_native` subagent, and each entry of a provider thread's
`pendingBackgroundTasks` (its roster), is a background item: it appears
(`background.started`, by the run the row names), it leaves (`background.finished`).
What left is kept a while: the notice that tells of its end names no item.
"""

from __future__ import annotations

from typing import Any

from .fields import first_line, string
from .ids import item_id
from .memory import KEEP_DEPARTED, KEEP_NATIVES, bound
from .state import MapState
from .statuses import ITEM_FINISHED, TASK_STATUS, TERMINAL

ROSTER_KINDS = {"subagent": "subagent", "command": "command", "monitor": "monitor"}
# Rosters written before kinds existed name Claude's own task types.
LEGACY_TASK_TYPES = {"local_bash": "command", "local_agent": "subagent", "monitor": "monitor"}


def native(state: MapState, p: dict, occurred: str | None) -> None:
    """A `provider_native` subagent's row: started in the run the row names, finished
    when its status is terminal."""
    natives = state.memory.natives
    sub_id, thread = p["id"], p["threadId"]
    status = p.get("status")
    if status not in TASK_STATUS:
        state.unknown_value(f"subagent.status:{status}")
        return
    final = TASK_STATUS[status] in TERMINAL
    run = string(p.get("runId")) or None
    known = natives.get(sub_id)
    # Resumed in another run after it ended: new background work of that run.
    if known is None or (known["finished"] and not final and run != known["run"]):
        generation = 1 if known is None else known["generation"] + 1
        at = state.at(p.get("startedAt"), p.get("updatedAt"), occurred)
        if at is None:
            return
        bound(natives, KEEP_NATIVES - 1)
        state.natives_of(thread).add(sub_id)
        known = natives[sub_id] = {
            "thread": thread,
            "item": sub_id if generation == 1 else f"{sub_id}#{generation}",
            "run": run,
            "generation": generation,
            "finished": False,
            "child": string(p.get("childThreadId")) or None,
            "title": string(p.get("title")) or None,
        }
        label = string(p.get("title")) or first_line(p.get("prompt"))
        state.emit(
            "background.started",
            (known["item"],),
            at,
            {
                "thread": thread,
                "item": known["item"],
                "kind": "subagent",
                "run": run,
                "label": label or None,
            },
        )
    if final and not known["finished"]:
        at = state.at(p.get("completedAt"), p.get("updatedAt"), occurred)
        if at is None:
            return
        known["finished"] = True
        state.emit(
            "background.finished",
            (known["item"],),
            at,
            {"thread": thread, "item": known["item"], "status": ITEM_FINISHED.get(status)},
        )
        depart(state, thread, known["item"], "subagent", string(p.get("title")), known["child"], at)


def roster(state: MapState, p: dict, occurred: str | None, run: str | None = None) -> None:
    """A provider thread's row: each entry new to its roster started (by `run`, the run
    the row's metadata names), each entry gone from it finished."""
    provider_thread = string(p.get("id"))
    rosters = state.memory.rosters
    before = rosters.get(provider_thread, {"thread": None, "tasks": {}})
    thread = string(p.get("appThreadId")) or before["thread"]
    if not provider_thread or not thread:
        state.skipped += 1  # a provider thread bound to no app thread
        return
    at = state.at(p.get("updatedAt"), occurred)
    if at is None:
        return
    if "pendingBackgroundTasks" in p and not state.memory.build.get("roster"):
        # This build lists background work: its roster, not command items, tells it.
        state.memory.build["roster"] = 1
    entries = roster_entries(state, p.get("pendingBackgroundTasks"))
    run = string(run) or None
    natives_by_child = {
        native["child"]
        for native in map(state.memory.natives.get, state.natives_of(thread))
        if native and native.get("child")
    }
    for task_id, entry in entries.items():
        if task_id in before["tasks"]:
            continue
        kind, description, child = entry
        if kind == "subagent" and child in natives_by_child:
            continue  # the native subagent's own row stands for it
        item = item_id(thread, task_id)
        state.emit(
            "background.started",
            (item,),
            at,
            {"thread": thread, "item": item, "kind": kind, "run": run, "label": description},
        )
    for task_id, entry in before["tasks"].items():
        if task_id in entries:
            continue
        kind, description, child = entry
        if kind == "subagent" and child in natives_by_child:
            continue
        item = item_id(before["thread"] or thread, task_id)
        state.emit(
            "background.finished",
            (item,),
            at,
            {"thread": before["thread"] or thread, "item": item},
        )
        depart(state, before["thread"] or thread, item, kind, description, child, at)
    if entries:
        rosters[provider_thread] = {"thread": thread, "tasks": entries}
    else:
        rosters.pop(provider_thread, None)  # nothing listed: nothing to remember
    if before["thread"] != thread:
        if before["thread"]:
            state.rosters_of(before["thread"]).discard(provider_thread)
        state.rosters_of(thread).add(provider_thread)


def roster_entries(state: MapState, raw: Any) -> dict[str, list]:
    """`pendingBackgroundTasks` as the roster keeps it: task id -> [kind, description,
    child thread], kinds in the contract's words."""
    entries: dict[str, list] = {}
    for entry in raw if isinstance(raw, list) else []:
        task_id = string(entry.get("taskId")) if isinstance(entry, dict) else ""
        if not task_id:
            state.unknown_value("pendingBackgroundTasks.taskId")
            continue
        kind = entry.get("kind")
        if kind is None:
            kind = LEGACY_TASK_TYPES.get(entry.get("taskType"), "other")
        elif kind == "background_task":
            kind = "other"
        elif kind in ROSTER_KINDS:
            kind = ROSTER_KINDS[kind]
        else:
            state.unknown_value(f"pendingBackgroundTasks.kind:{kind}")
            kind = "other"
        description = string(entry.get("description")) or None
        entries[task_id] = [kind, description, string(entry.get("childThreadId")) or None]
    return entries


def depart(
    state: MapState,
    thread: str,
    item: str,
    kind: str,
    description: str | None,
    child: str | None,
    at: str,
) -> None:
    """An item that left: kept (the last few of each thread) for the notice that tells
    of its end, which names no item (wakes.match)."""
    departed = state.memory.departed.setdefault(thread, [])
    departed.append([item, kind, description, child, at])
    del departed[:-KEEP_DEPARTED]


def work_cancelled(
    state: MapState, p: dict, occurred: str | None, thread: str | None = None
) -> None:
    """Restart recovery cancelled work listed on a run (newer builds): each listed
    roster entry still known is finished, cancelled."""
    work = p.get("restartCancelledBackgroundWork")
    thread = thread or string(p.get("threadId"))
    at = state.at(p.get("updatedAt"), occurred)
    if not isinstance(work, list) or not thread or at is None:
        state.skipped += 1
        return
    for entry in work:
        task_id = string(entry.get("id")) if isinstance(entry, dict) else ""
        for provider_thread in list(state.rosters_of(thread)):
            roster = state.memory.rosters.get(provider_thread)
            if not roster or task_id not in roster["tasks"]:
                continue
            kind, description, child = roster["tasks"].pop(task_id)
            item = item_id(thread, task_id)
            state.emit(
                "background.finished",
                (item,),
                at,
                {"thread": thread, "item": item, "status": "cancelled"},
            )
            depart(state, thread, item, kind, description, child, at)
