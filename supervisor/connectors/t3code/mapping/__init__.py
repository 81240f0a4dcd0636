"""T3 Code's rows as contract events: a pure translation, given what was seen last.

T3 stores whole entities (a subagent, a run, a provider thread's roster, a message, a
context transfer) and rewrites them in place; each event row carries the entity after
the change. `Mapper` diffs each one against its memory (a JSON-able dict that the
follower keeps beside its cursor) and says what changed in the contract's words
(docs/event-contract.md §3; t3code-facts.md for T3's side):

- an `app_owned` subagent is a task: first sight `task.delegated`, each status change
  `task.reported` (its `result` is the summary once it is final);
- a `provider_native` subagent, and each entry of a provider thread's
  `pendingBackgroundTasks`, is a background item: it appears (`background.started`, by
  the run the row names), it leaves (`background.finished`);
- a message with a `notification` is a wake (`wake.queued`), carrying for a task the
  text handed to the parent (the subagent's `result`, else the notice's `detail`); a
  command or monitor notice names no item, so it is matched to the roster entry that
  left just before (and whose description its text names). Builds before that field
  mark a wake only by who wrote it (`createdBy: agent`, `creationSource: server` or
  `provider`); a task's names the task id in its text;
- on builds without a roster, a `command_execution` item still running when its run
  finishes is that run's background work (`background.started` by the item's run,
  told when the run finishes; `background.finished` when the item ends);
- a run is `run.requested` with the trigger of the message that started it (a notice:
  `wake`; the child's first run: `delegation`), `run.started`, `run.finished` with T3's
  own choice of its text (the latest non-empty assistant message) and, when it failed,
  the error T3 wrote as an `error` turn item. A wake is delivered when the run it
  started starts (a queued run may never start), or when it is steered into a run;
- a `subagent_result` context transfer names the task's result run, and for a task whose
  result went back in the tool call (`wait`) it is the delivery itself.

Event ids are derived from the facts (an entity id, a status and its time), never from
the row that told them, so importing the projections and following the log say the same
fact with the same id: a second telling is a duplicate, not a double.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any, Protocol

from supervisor.core.connectors import CONTINUE_WAKE_PREFIX
from supervisor.core.contract import TaskDelegated

from ..schema import RESTART_COMMAND, Row, decoded
from .fields import ISO
from .fields import as_ordinal as _ordinal
from .fields import first_line as _first_line
from .fields import first_string as _first_text
from .fields import parse_time as _parse
from .fields import string as _text
from .fields import time_problem as _time_problem
from .ids import event_id, item_id, request_key
from .memory import (
    KEEP_DEPARTED,
    KEEP_ENDED,
    KEEP_MESSAGES,
    KEEP_NATIVES,
    KEEP_REQUESTS,
    KEEP_RUNS,
    KEEP_TASK_WAKES,
    KEEP_TASKS,
    KEEP_TRANSFERS,
    Memory,
    bound,
    keep_only,
)
from .statuses import (
    ITEM_FINISHED,
    RUN_FINISHED,
    RUN_UNDER_WAY,
    TASK_STATUS,
    TERMINAL,
    WAKE_OUTCOMES,
)

# Event types this follower maps; the others T3 writes are known and carry nothing here.
THREAD_TYPES = frozenset(
    {
        "thread.created",
        "thread.archived",
        "thread.unarchived",
        "thread.deleted",
        "thread.metadata-updated",
        "thread.runtime-mode-updated",
        "thread.interaction-mode-updated",
        "thread.model-selection-updated",
        "thread.provider-switched",
    }
)
# Known to carry nothing a supervisor needs (facts §3): skipped quietly, never "unknown".
IGNORED_TYPES = frozenset(
    {
        "thread.settled",
        "thread.unsettled",
        "thread.snoozed",
        "thread.unsnoozed",
        "thread.pinned",
        "thread.unpinned",
        "thread.auto-settle-set",
        "thread.pin-reordered",
        "thread.active-reordered",
        "thread.visited",
        "thread.marked-unread",
        "thread.pull-request-synced",
        "run-attempt.created",
        "run-attempt.updated",
        "node.updated",
        "provider-session.attached",
        "provider-session.updated",
        "provider-session.detached",
        "provider-turn.updated",
        "runtime-request.updated",
        "plan.updated",
        "checkpoint-scope.created",
        "checkpoint.captured",
        "checkpoint.rollback-requested",
        "context-handoff.updated",
    }
)
# Families T3 grows (attempts, sessions, checkpoints): any member is known and skipped.
IGNORED_PREFIXES = ("run-attempt.", "provider-session.", "checkpoint")

# T3's failure classes of a run's error item (facts §2; `usage_limit` on newer builds).
# Another is passed on as T3 wrote it, and counted.
FAILURE_CLASSES = frozenset(
    {
        "provider_error",
        "transport_error",
        "permission_error",
        "validation_error",
        "unknown",
        "usage_limit",
    }
)
# T3's delivery records of a terminal task (`completionDelivery.state`), and those that
# settle how (or that) the result reached the parent.
DELIVERY_STATES = frozenset({"pending", "claimed", "delivered", "acknowledged", "disposed"})
SETTLED = frozenset({"delivered", "acknowledged", "disposed"})
ROSTER_KINDS = {"subagent": "subagent", "command": "command", "monitor": "monitor"}
# Rosters written before kinds existed name Claude's own task types.
LEGACY_TASK_TYPES = {"local_bash": "command", "local_agent": "subagent", "monitor": "monitor"}
# Notification source kinds -> the item kinds they report on (None: any).
NOTICE_KINDS: dict[str, frozenset[str] | None] = {
    "command": frozenset({"command", "other"}),
    "background_command": frozenset({"command", "other"}),
    "monitor": frozenset({"monitor", "other"}),
    "subagent": frozenset({"subagent", "other"}),
    "background_task": None,
}
# The contract requires `mode`, T3 does not store it: until the contract lets it be left
# out, a task whose mode no stored field tells is sent as "async".
MODE_REQUIRED = TaskDelegated.model_fields["mode"].is_required()
REPORTED, DELIVERED = 1, 2  # what a transfer has told
ACTIVITY_EVERY = 30  # seconds: the contract's throttle for run.activity
# The agents' tool that delegates a task, as providers name a call of it (Claude:
# `mcp__<server>__delegate_task`; Codex: `<server>.delegate_task`).
DELEGATE_TOOL = "delegate_task"
TOOL_NAME_PARTS = re.compile(r"__|[./:]")

# T3's result for a child run that wrote no assistant text (J SubagentProjection.ts).
NO_TEXT_RESULT = {"completed": "Child task completed without an assistant result."}


class Lookup(Protocol):
    """What the mapper may read from the projections when its memory has nothing."""

    def message(self, message_id: str) -> Any: ...

    def last_assistant_text(self, run_id: str) -> str | None: ...


class Mapper:
    """Translates rows one at a time into contract events, updating `memory` as it goes.

    `memory` is the follower's to keep: after the events of a batch are stored, the
    memory must be stored with them (same transaction), else a replay would differ.
    """

    def __init__(
        self, memory: dict | None = None, *, env: str | None = None, lookup: Lookup | None = None
    ):
        self.mem = Memory.from_dict(memory if memory is not None else {})
        self.env = env
        self.lookup = lookup
        self.out: list[dict] = []
        self.skipped = 0  # rows with nothing for Supervisor
        self.unknown_rows = 0  # rows not understood
        self.unknown_values = 0  # values outside T3's known enumerations
        self.unknown: Counter[str] = Counter()
        self._started_by: set[str] = set()  # an import: messages that started a run
        self._began_by: set[str] = set()  # an import: messages whose run began
        self._run_ends: dict[str, str] = {}  # an import: finished runs' completedAt
        self._importing = False
        # Indexes over memory, built when first needed and kept up as it changes.
        self._rosters_by_thread: dict[str, set[str]] | None = None
        self._natives_by_thread: dict[str, set[str]] | None = None
        self._tasks_by_child: dict[str, set[str]] | None = None

    @property
    def memory(self) -> dict:
        """The memory as the follower stores it (its sections change in place)."""
        return self.mem.to_dict()

    # --- entry points ---------------------------------------------------------------

    def map_rows(self, rows: Iterable[Row]) -> list[dict]:
        for row in rows:
            self.map_row(row)
        return self.take()

    def take(self) -> list[dict]:
        out, self.out = self.out, []
        return out

    def map_row(self, row: Row) -> None:
        if row.aggregate_kind not in (None, "thread") or row.version not in (None, 2):
            self.skipped += 1  # an older version's row, or another aggregate
            return
        kind = row.event_type
        if not isinstance(row.payload, dict):
            self._unknown_row(f"payload:{kind}")
            return
        if kind in THREAD_TYPES:
            self.thread(row.payload, row.occurred_at, created=kind == "thread.created")
        elif kind in ("run.created", "run.updated"):
            restart = (row.command_id or "").startswith(RESTART_COMMAND)
            self.run(row.payload, row.occurred_at, restart=restart)
        elif kind == "subagent.updated":
            restart = (row.command_id or "").startswith(RESTART_COMMAND)
            self.subagent(row.payload, row.occurred_at, restart=restart)
        elif kind == "provider-thread.updated":
            # Only this type reads the metadata: decoded here, not for every row.
            metadata = decoded(row.metadata)
            run = metadata.get("runId") if isinstance(metadata, dict) else None
            self.roster(row.payload, row.occurred_at, run=run)
        elif kind == "message.updated":
            self.message(row.payload, row.occurred_at)
        elif kind in ("context-transfer.created", "context-transfer.updated"):
            self.transfer(row.payload, row.occurred_at)
        elif kind == "turn-item.updated":
            self.turn_item(row.payload, row.occurred_at)
        elif kind == "run.background-work-cancelled":
            self.work_cancelled(row.payload, row.occurred_at, row.stream_id)
        elif kind in IGNORED_TYPES or (kind or "").startswith(IGNORED_PREFIXES):
            self.skipped += 1
        else:
            self._unknown_row(f"event_type:{kind}")

    def import_state(
        self,
        *,
        threads: list,
        subagents: list,
        provider_threads: list,
        messages: list,
        runs: list,
        transfers: list,
        texts: dict[str, tuple[str, str]],
        turn_items: list = (),
        restart_ended: set[str] | frozenset[str] = frozenset(),
    ) -> list[dict]:
        """The projections' current state as if each entity had just been seen whole:
        the same ids as following would give the same facts."""
        for payload in threads:
            self._guard(self.thread, payload)
        for payload in runs:
            if isinstance(payload, dict) and _text(payload.get("id")):
                self._cohort(payload["id"], payload)
        # The agents' delegate_task calls before the tasks they made: a task names its call.
        for payload in turn_items:
            is_call = isinstance(payload, dict) and payload.get("type") == "dynamic_tool"
            if is_call and is_delegate_call(payload):
                self.delegate_call(payload, None)
        # Tasks before native subagents and rosters: a roster entry may be a subagent's.
        for payload in sorted(
            (p for p in subagents if isinstance(p, dict)),
            key=lambda p: (
                p.get("origin") != "app_owned",
                _text(p.get("startedAt")) or _text(p.get("updatedAt")),
            ),
        ):
            if isinstance(payload, dict):
                restart = _text(payload.get("id")) in restart_ended
                self.subagent(payload, None, restart=restart)
            else:
                self._unknown_row("payload:projection")
        for payload in provider_threads:
            self._guard(self.roster, payload)
        self._importing = True
        # Errors and commands before the messages: a command still running (or ended
        # after) when its run had finished was background work of that run, and the
        # continuation that woke the thread for it names it only by its text.
        self._run_ends = {
            _text(p.get("id")): _text(p.get("completedAt"))
            for p in runs
            if isinstance(p, dict) and p.get("status") in RUN_FINISHED
        }
        for payload in sorted(
            (p for p in turn_items if isinstance(p, dict)),
            key=lambda p: _text(p.get("startedAt")) or _text(p.get("updatedAt")),
        ):
            self._guard(self.turn_item, payload)
        self._started_by = {
            p["userMessageId"] for p in runs if isinstance(p, dict) and p.get("userMessageId")
        }
        self._began_by = {
            p["userMessageId"]
            for p in runs
            if isinstance(p, dict) and p.get("userMessageId") and p.get("startedAt")
        }
        for payload in sorted(
            (p for p in messages if isinstance(p, dict)), key=lambda p: _text(p.get("createdAt"))
        ):
            self._guard(self.message, payload)
        for run_id, (created, text) in texts.items():
            self.mem.texts[run_id] = [created, text]
        for payload in sorted(
            (p for p in runs if isinstance(p, dict)),
            key=lambda p: (_text(p.get("threadId")), _ordinal(p.get("ordinal")) or 0),
        ):
            if isinstance(payload, dict):
                self.run(payload, None, restart=_text(payload.get("id")) in restart_ended)
            else:
                self._unknown_row("payload:projection")
        for payload in sorted(
            (p for p in transfers if isinstance(p, dict)), key=lambda p: _text(p.get("createdAt"))
        ):
            self._guard(self.transfer, payload)
        self._started_by, self._began_by = set(), set()
        self._importing, self._run_ends = False, {}
        # Errors, classes and texts of runs still under way stay; the others were used.
        for section in (self.mem.errors, self.mem.classes, self.mem.texts):
            keep_only(section, self.mem.runs)
        return self.take()

    def _guard(self, handler, payload, occurred=None) -> None:
        if isinstance(payload, dict):
            handler(payload, occurred)
        else:
            self._unknown_row("payload:projection")

    # --- threads --------------------------------------------------------------------

    def thread(self, p: dict, occurred: str | None, *, created: bool = False) -> None:
        thread = _text(p.get("id")) or None
        if thread is None:
            self._unknown_value("thread.id")
            return
        # Described when made, and again (later) when its title or parent changes.
        first, then = ("createdAt", "updatedAt") if created else ("updatedAt", "createdAt")
        at = self._at(p.get(first), p.get(then), occurred)
        if at is None:
            return
        title = p.get("title") if isinstance(p.get("title"), str) else None
        # The parent link is nested: no build writes a top-level `parentThreadId`.
        lineage = p.get("lineage") if isinstance(p.get("lineage"), dict) else {}
        parent = _first_text(lineage.get("parentThreadId"))
        provider = _first_text(p.get("providerInstanceId"), p.get("defaultProvider"))
        selection = p.get("modelSelection")
        model = _text(selection.get("model")) or None if isinstance(selection, dict) else None
        data = {
            "thread": thread,
            "title": title,
            "parent_thread": parent,
            "provider": provider,
            "model": model,
        }
        # The content is the fact: telling the same thread again is a duplicate.
        self._emit("thread.seen", (thread, title, parent, provider, model), at, data)

    # --- subagents: tasks and native background work --------------------------------

    def subagent(self, p: dict, occurred: str | None, *, restart: bool = False) -> None:
        origin = p.get("origin")
        if not _text(p.get("id")) or not _text(p.get("threadId")):
            self._unknown_value("subagent.id")
        elif origin == "app_owned":
            self.task(p, occurred, restart=restart)
        elif origin == "provider_native":
            self.native(p, occurred)
        else:
            self._unknown_value(f"subagent.origin:{origin}")

    def task(self, p: dict, occurred: str | None, *, restart: bool = False) -> None:
        tasks = self.mem.tasks
        task_id, parent = p["id"], p["threadId"]
        child = _text(p.get("childThreadId")) or None
        known = tasks.get(task_id)
        if known is None:
            at = self._at(p.get("startedAt"), p.get("updatedAt"), occurred)
            if at is None:
                return
            bound(tasks, KEEP_TASKS - 1)
            known = tasks[task_id] = {
                "parent": parent,
                "run": _text(p.get("runId")) or None,
                "child": None,
                "at": at,
                "status": None,
                "result": None,
                "result_run": None,
                "waits": _waits(p),
            }
        if child and known["child"] != child:
            # A child thread's first run is its first task's (later ones are follow-ups).
            self.mem.children.setdefault(child, task_id)
            if known["child"] and self._tasks_by_child is not None:
                self._tasks_by_child.get(known["child"], set()).discard(task_id)
            known["child"] = child
            if self._tasks_by_child is not None:
                self._tasks_by_child.setdefault(child, set()).add(task_id)
        if "request" not in known:
            known["request"] = self._request_of(task_id, p, known)
            if known["request"] not in self.mem.requests:
                # No call seen: one told later may still name it (its output), so what
                # the delegation said is kept to tell it again, while the task is open.
                known["said"] = [_text(p.get("title")), _text(p.get("prompt"))]
        if (
            "told" not in known
            or known["told"] != known["child"]
            or known.get("told_request") != known["request"]
        ):
            known["told"], known["told_request"] = known["child"], known["request"]
            self._delegated(task_id, p, known)
        status = p.get("status")
        mapped = TASK_STATUS.get(status)
        if mapped is None:
            self._unknown_value(f"subagent.status:{status}")
            return
        delivery = p.get("completionDelivery")
        record = delivery.get("state") if isinstance(delivery, dict) else None
        known["record"] = record if record in DELIVERY_STATES else None
        result = p.get("result") if isinstance(p.get("result"), str) else None
        if mapped in TERMINAL and result is not None:
            known["result"] = result
        if mapped == known["status"]:
            self._delivery(task_id, p, known, occurred)
            return
        final = mapped in TERMINAL
        if final:
            known.pop("said", None)
        at = self._at(p.get("completedAt") if final else None, p.get("updatedAt"), occurred)
        if at is None:
            return
        known["status"] = mapped
        # Cancelled by a restart's recovery or a stop's (K33): nobody cancelled it.
        known["cut"] = 1 if restart and mapped == "cancelled" else None
        self._report(task_id, known, mapped, at, key=(task_id, mapped, at))
        self._delivery(task_id, p, known, occurred)

    def _delivery(self, task_id: str, p: dict, known: dict, occurred: str | None) -> None:
        """T3's own record of how a terminal result reached the parent (P006, K33, Z32;
        J has none), in the contract's words:

        - `acknowledged`: the parent read it (`task_status`, or a `wait` returning it)
          in the run T3 names: a task wake carrying the result, delivered to that run;
        - `disposed`: handed over by other means (a delivery by hand), and no wake will
          come: a delivery by hand of T;
        - `delivered`: the wake reached the run it started or joined.

        A wake T3 had reserved for the task and then cancelled (the read or the dispose
        made it moot) was delivered by that read or that hand, not late. `pending` and
        `claimed` say nothing yet."""
        delivery = p.get("completionDelivery")
        if not isinstance(delivery, dict):
            return
        state = delivery.get("state")
        if state not in DELIVERY_STATES:
            self._unknown_value(f"completionDelivery.state:{state}")
            return
        if known["status"] not in TERMINAL or state not in SETTLED or known.get("settled"):
            return
        at = self._at(p.get("updatedAt"), occurred)
        if at is None:
            return
        observed = _text(delivery.get("observedByRunId")) or None
        if state == "acknowledged" and not known.get("read"):
            known["read"] = 1
            wake = f"{task_id}:read"
            self._emit(
                "wake.queued",
                (wake,),
                at,
                {
                    "wake": wake,
                    "thread": known["parent"],
                    "source": {"kind": "task", "task": task_id, "thread": known["child"]},
                    "summary": known["result"],
                    "outcome": known["status"] if known["status"] in WAKE_OUTCOMES else None,
                },
            )
            self._emit("wake.delivered", (wake,), at, {"wake": wake, "run": observed})
        elif state == "disposed":
            wake = f"{task_id}:disposed"
            self._emit(
                "wake.queued",
                (wake,),
                at,
                {
                    "wake": wake,
                    "thread": known["parent"],
                    "source": {"kind": "manual", "task": task_id},
                },
            )
        known["settled"] = [state, at, observed]
        for wake, entry in (known.get("wakes") or {}).items():
            self._settle(wake, entry, known["settled"])

    def _settle(self, wake: str, entry: list, settled: list, queued: str | None = None) -> None:
        """A task wake whose delivery T3 has settled: delivered to the run that read the
        result, to the run the wake started or joined, or (disposed) to none. A wake
        its run delivered already keeps that delivery: the id is the same, the first
        telling wins."""
        state, at, observed = settled
        if queued is not None and _parse(queued) > _parse(at):
            at = queued  # never delivered before it was queued
        run = {"acknowledged": observed, "delivered": entry[1]}.get(state)
        self._emit("wake.delivered", (wake,), at, {"wake": wake, "run": run})

    def _delegated(self, task_id: str, p: dict, known: dict) -> None:
        mode = known["waits"]
        data = {
            "task": task_id,
            "parent_thread": known["parent"],
            "child_thread": known["child"],
            "title": _text(p.get("title")),
            "prompt": p.get("prompt") if isinstance(p.get("prompt"), str) else None,
            "parent_run": known["run"],
            "mode": None if mode is None else ("wait" if mode else "async"),
            "client_request_id": known.get("request"),
        }
        if data["mode"] is None and MODE_REQUIRED:
            data["mode"] = "async"
        # Told again, with the same `at`, once the child thread is known: the id with
        # the child extends the one without, so it sorts after it and wins the tie
        # (contract §4) without moving the delegation's time. So is a call that names
        # the task only after it was told.
        child = known["child"]
        suffix = ":child:" + event_id("", child).rsplit(":", 1)[1] if child else ""
        if known.get("late_request"):
            suffix += ":request:" + event_id("", known["request"]).rsplit(":", 1)[1]
        self._emit("task.delegated", (task_id,), known["at"], data, suffix=suffix)

    def _report(
        self, task_id: str, known: dict, status: str, at: str, *, key, told_as=None
    ) -> None:
        final = status in TERMINAL
        error, failure_class = self._failure_of(known) if status == "failed" else (None, None)
        self._emit(
            "task.reported",
            key,
            at,
            {
                "task": task_id,
                "status": status,
                "summary": known["result"] if final else None,
                "result_run": known["result_run"] if final else None,
                # T3 hands a result only by a wake, a read or the wait call's return; a
                # task its recovery cancelled it hands nothing, and says so (cause).
                "delivery": "wake" if final and not known.get("cut") else None,
                "cause": "restart" if final and known.get("cut") else None,
                "error": error,
                "failure_class": failure_class,
                # T3's own delivery record and its cohort's count then: evidence.
                "delivery_record": known.get("record") if final else None,
                "settled_deliveries": self.mem.cohorts.get(known["run"]) if final else None,
            },
            told_as=told_as,
        )

    def _failure_of(self, known: dict) -> tuple[str | None, str | None]:
        """T3's failure message and class for the task's result: its result run's error,
        else (the result run not told yet) the child's last failed run's. Memory kept
        before classes were read holds `[thread, error]`: no class then."""
        failures = self.mem.failures
        if known["result_run"]:
            failure = failures.get(known["result_run"])
            return (failure[1], _class_of(failure)) if failure else (None, None)
        for failure in reversed(failures.values()):
            if failure[0] == known["child"]:
                return failure[1], _class_of(failure)
        return None, None

    def native(self, p: dict, occurred: str | None) -> None:
        natives = self.mem.natives
        sub_id, thread = p["id"], p["threadId"]
        status = p.get("status")
        if status not in TASK_STATUS:
            self._unknown_value(f"subagent.status:{status}")
            return
        final = TASK_STATUS[status] in TERMINAL
        run = _text(p.get("runId")) or None
        known = natives.get(sub_id)
        # Resumed in another run after it ended: new background work of that run.
        if known is None or (known["finished"] and not final and run != known["run"]):
            generation = 1 if known is None else known["generation"] + 1
            at = self._at(p.get("startedAt"), p.get("updatedAt"), occurred)
            if at is None:
                return
            bound(natives, KEEP_NATIVES - 1)
            self._natives_of(thread).add(sub_id)
            known = natives[sub_id] = {
                "thread": thread,
                "item": sub_id if generation == 1 else f"{sub_id}#{generation}",
                "run": run,
                "generation": generation,
                "finished": False,
                "child": _text(p.get("childThreadId")) or None,
                "title": _text(p.get("title")) or None,
            }
            label = _text(p.get("title")) or _first_line(p.get("prompt"))
            self._emit(
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
            at = self._at(p.get("completedAt"), p.get("updatedAt"), occurred)
            if at is None:
                return
            known["finished"] = True
            self._emit(
                "background.finished",
                (known["item"],),
                at,
                {"thread": thread, "item": known["item"], "status": ITEM_FINISHED.get(status)},
            )
            self._departed(
                thread, known["item"], "subagent", _text(p.get("title")), known["child"], at
            )

    # --- the background roster ------------------------------------------------------

    def roster(self, p: dict, occurred: str | None, run: str | None = None) -> None:
        provider_thread = _text(p.get("id"))
        rosters = self.mem.rosters
        before = rosters.get(provider_thread, {"thread": None, "tasks": {}})
        thread = _text(p.get("appThreadId")) or before["thread"]
        if not provider_thread or not thread:
            self.skipped += 1  # a provider thread bound to no app thread
            return
        at = self._at(p.get("updatedAt"), occurred)
        if at is None:
            return
        if "pendingBackgroundTasks" in p and not self.mem.build.get("roster"):
            # This build lists background work: its roster, not command items, tells it.
            self.mem.build["roster"] = 1
        entries = self._entries(p.get("pendingBackgroundTasks"))
        run = _text(run) or None
        natives_by_child = {
            native["child"]
            for native in map(self.mem.natives.get, self._natives_of(thread))
            if native and native.get("child")
        }
        for task_id, entry in entries.items():
            if task_id in before["tasks"]:
                continue
            kind, description, child = entry
            if kind == "subagent" and child in natives_by_child:
                continue  # the native subagent's own row stands for it
            item = item_id(thread, task_id)
            self._emit(
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
            self._emit(
                "background.finished",
                (item,),
                at,
                {"thread": before["thread"] or thread, "item": item},
            )
            self._departed(before["thread"] or thread, item, kind, description, child, at)
        if entries:
            rosters[provider_thread] = {"thread": thread, "tasks": entries}
        else:
            rosters.pop(provider_thread, None)  # nothing listed: nothing to remember
        if before["thread"] != thread:
            if before["thread"]:
                self._rosters_of(before["thread"]).discard(provider_thread)
            self._rosters_of(thread).add(provider_thread)

    def _entries(self, raw: Any) -> dict[str, list]:
        entries: dict[str, list] = {}
        for entry in raw if isinstance(raw, list) else []:
            task_id = _text(entry.get("taskId")) if isinstance(entry, dict) else ""
            if not task_id:
                self._unknown_value("pendingBackgroundTasks.taskId")
                continue
            kind = entry.get("kind")
            if kind is None:
                kind = LEGACY_TASK_TYPES.get(entry.get("taskType"), "other")
            elif kind == "background_task":
                kind = "other"
            elif kind in ROSTER_KINDS:
                kind = ROSTER_KINDS[kind]
            else:
                self._unknown_value(f"pendingBackgroundTasks.kind:{kind}")
                kind = "other"
            description = _text(entry.get("description")) or None
            entries[task_id] = [kind, description, _text(entry.get("childThreadId")) or None]
        return entries

    def _departed(self, thread, item, kind, description, child, at) -> None:
        departed = self.mem.departed.setdefault(thread, [])
        departed.append([item, kind, description, child, at])
        del departed[:-KEEP_DEPARTED]

    # --- messages: notices (wakes), start messages, final texts ----------------------

    def message(self, p: dict, occurred: str | None) -> None:
        message_id, thread = _text(p.get("id")), _text(p.get("threadId"))
        if not message_id or not thread:
            self._unknown_value("message.id")
            return
        role = p.get("role")
        run = _text(p.get("runId")) or None
        if role == "assistant":
            if run and run in self.mem.runs:
                text = p.get("text") if isinstance(p.get("text"), str) else ""
                self._text_of(run, _text(p.get("updatedAt")) or _text(p.get("createdAt")), text)
                self.activity(p, occurred)
            return
        entry = self._remember(p, message_id, thread, role, run, occurred)
        if entry is None:
            return
        # A notice given a run that another message started was steered into that run
        # (a run not seen yet may be the notice's own, queued: its row tells).
        known_run = self.mem.runs.get(run) if run else None
        steered = (
            isinstance(entry, list)
            and entry[0]
            and not entry[1]
            and (self._importing or (known_run is not None and known_run.get("requested")))
        )
        if steered and message_id not in self._started_by:
            at = self._at(p.get("updatedAt"), occurred)
            if at is not None:
                entry[1] = 1
                for wake in entry[0]:
                    self._emit("wake.delivered", (wake,), at, {"wake": wake, "run": run})
        for run_id in self.mem.pending.pop(message_id, []):
            known = self.mem.runs.get(run_id)
            held = known.pop("held", None) if known else None
            if held:
                self._request(run_id, held["threadId"], held["ordinal"], held, None, known)
                if known.get("finished"):
                    del self.mem.runs[run_id]

    def _remember(self, p, message_id, thread, role, run, occurred):
        """What a run started by this message needs to know of it: a notice's wakes and
        whether they were delivered (`[wakes, delivered]`, kept: each notice is read once),
        or "m" (a message) and "s" (a scheduled task's), kept only while no run has it."""
        messages = self.mem.messages
        entry = messages.get(message_id)
        if entry is not None:
            return entry
        notification = p.get("notification")
        if not isinstance(notification, dict) and role == "user":
            notification = legacy_notification(p)
        if isinstance(notification, dict):
            entry = [self.notice(p, notification, thread, occurred), 0]
        elif role == "user" and (wakes := self.continued(p, message_id, thread, occurred)):
            entry = [wakes, 0]  # as a notice: the run it starts or joins names the wake
        elif role == "user":
            entry = "s" if p.get("scheduledTaskId") else "m"
            started = self._importing and message_id in self._started_by
            if run and not started and message_id not in self.mem.pending:
                return entry  # already in a run: no run will name it as new
        else:
            return None  # system messages start no run
        messages[message_id] = entry
        bound(messages, KEEP_MESSAGES)
        return entry

    def continued(self, p: dict, message_id: str, thread: str, occurred: str | None) -> list:
        """Supervisor's continue of a task ([its wake]), or [] for any other message. The
        connector sends it with the continue's manual wake as its message id
        (`supervisor:continue:<key>`): a manual wake of the child's task, so the run it
        starts or joins is the task's (contract §4, rule 5)."""
        task = self.mem.children.get(thread)
        at = self._at(p.get("createdAt"), occurred)
        if not message_id.startswith(CONTINUE_WAKE_PREFIX) or not task or at is None:
            return []
        data = {
            "wake": message_id,
            "thread": thread,
            "source": {"kind": "manual", "task": task},
            "summary": _text(p.get("text")) or None,
        }
        self._emit("wake.queued", (message_id,), at, data)
        return [message_id]

    def notice(self, p: dict, notification: dict, thread: str, occurred: str | None) -> list:
        """The wakes a notice queues (their ids), or [] when it is not understood."""
        source = notification.get("source") if isinstance(notification.get("source"), dict) else {}
        kind = source.get("kind")
        at = self._at(p.get("createdAt"), occurred)
        if at is None:
            return []
        outcome = notification.get("outcome")
        if outcome not in WAKE_OUTCOMES:
            if outcome != "unknown":
                self._unknown_value(f"notification.outcome:{outcome}")
            outcome = None
        summary = _text(notification.get("summary")) or None
        detail = notification.get("detail") if isinstance(notification.get("detail"), str) else None
        message_id = p["id"]
        if kind == "delegated_task":
            task_ids = [t for t in source.get("taskIds") or [] if isinstance(t, str) and t]
            if not task_ids:
                self._unknown_value("notification.source.taskIds")
                return []
            wakes = []
            for index, task_id in enumerate(task_ids):
                wake = message_id if index == 0 else f"{message_id}#{index + 1}"
                task = self.mem.tasks.get(task_id)
                # The text handed is the result; the notice's summary is only a headline.
                text = (task or {}).get("result") or detail
                child = _text(source.get("childThreadId")) or (task or {}).get("child")
                self._emit(
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
                    self._task_wake(task, wake, message_id, _text(p.get("runId")) or None, at)
            return wakes
        family = NOTICE_KINDS.get(kind, ...)
        if family is ...:
            self._unknown_value(f"notification.source.kind:{kind}")
            return []
        if kind == "background_task" and source.get("work") == "subagent":
            family = NOTICE_KINDS["subagent"]
        item = self._match(
            thread, family, source, " ".join(filter(None, (summary, detail))), outcome, at
        )
        if item is None:
            # No roster entry left before it (it left before an import, or never entered
            # the roster): the notice proves the work existed and ended. It stands as an
            # item of its own, started by the contract's default run (the thread's latest
            # run requested by then).
            item = f"{thread}:bg:notice:{message_id}"
            if outcome != "updated":
                item_kind = _item_kind(kind, source)
                for event_type in ("background.started", "background.finished"):
                    data = {"thread": thread, "item": item}
                    if event_type == "background.started":
                        data.update(kind=item_kind, label=summary)
                    self._emit(event_type, (item,), at, data)
        self._emit(
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

    def _task_wake(self, task: dict, wake: str, message_id: str, run: str | None, at: str):
        """Remember a task's wake until T3 settles its delivery; one already settled is
        delivered now, unless (an import) the run it started tells it."""
        entry = [message_id, run]
        wakes = task.setdefault("wakes", {})
        wakes[wake] = entry
        bound(wakes, KEEP_TASK_WAKES)
        settled = task.get("settled")
        if settled and not (self._importing and message_id in self._began_by):
            self._settle(wake, entry, settled, queued=at)

    def _match(self, thread, family, source, text, outcome, at) -> str | None:
        """The item a command, monitor or subagent notice reports on: among the entries
        that left this thread's roster before it (and those still in it), the one whose
        description its text names, else the one that left last."""
        child = _text(source.get("childThreadId")) or None
        norm = _normalized(text)
        candidates = []
        departed = self.mem.departed.get(thread, [])
        for index, (item, kind, description, entry_child, left) in enumerate(departed):
            if family is not None and kind not in family:
                continue
            candidates.append((item, description, entry_child, 1, left, ("departed", index)))
        # Work still listed (a roster that keeps an entry until its wake run starts)
        # counts only when the notice names it.
        for roster in map(self.mem.rosters.get, self._rosters_of(thread)):
            if not roster or roster["thread"] != thread:
                continue
            for task_id, (kind, description, entry_child) in roster["tasks"].items():
                if (family is None or kind in family) and _names(norm, description):
                    item = item_id(thread, task_id)
                    candidates.append((item, description, entry_child, 0, "", None))
        for native in map(self.mem.natives.get, self._natives_of(thread)):
            if not native or native["thread"] != thread or native["finished"]:
                continue
            if (family is None or "subagent" in family) and _names(norm, native.get("title")):
                candidates.append(
                    (native["item"], native.get("title"), native["child"], 0, "", None)
                )
        if not candidates:
            return None

        def score(candidate):
            item, description, entry_child, gone, left, _ = candidate
            named = _names(norm, description)
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
                del self.mem.departed[thread]
        return best[0]

    # --- runs -----------------------------------------------------------------------

    def run(self, p: dict, occurred: str | None, *, restart: bool = False) -> None:
        run_id, thread = _text(p.get("id")), _text(p.get("threadId"))
        ordinal = _ordinal(p.get("ordinal"))
        if not run_id or not thread or ordinal is None:
            self._unknown_value("run.id")
            return
        self._cohort(run_id, p)
        if run_id in self.mem.ended:
            return  # told once: a later rewrite (a rollback, say) changes nothing here
        runs = self.mem.runs
        known = runs.get(run_id)
        if known is None:
            known = runs[run_id] = {"requested": False, "started": False, "activity": None}
            bound(runs, KEEP_RUNS)
        if not known["requested"]:
            self._request(run_id, thread, ordinal, p, occurred, known)
        status = p.get("status")
        started = p.get("startedAt")
        if not known["started"] and started and status != "rolled_back":
            at = self._at(started)
            if at is not None:
                known["started"], known["started_at"] = True, at
                self._emit("run.started", (run_id,), at, {"thread": thread, "run": run_id})
                self._deliver(run_id, known, at)
        if status in RUN_FINISHED or status == "rolled_back":
            at = self._at(p.get("completedAt"), p.get("updatedAt"), occurred)
            if at is None:
                return
            text = self._final_text(run_id)
            # T3 writes a failed run's error as an error turn item, not as its text.
            error = self.mem.errors.pop(run_id, None)
            failure_class = self.mem.classes.pop(run_id, None)
            if status != "failed":
                failure_class = None
            if status == "failed" and error is None and text:
                error = text
            if status == "failed" and error:
                # Kept for the task's report: T3 writes the failure only on the run.
                self.mem.failures[run_id] = [thread, error, failure_class]
                bound(self.mem.failures, KEEP_ENDED)
            if not text.strip() and error is None and thread in self.mem.children:
                # A task's run with no text: the result T3 hands for it (facts §4).
                text = NO_TEXT_RESULT.get(status) or f"Child task ended with status {status}."
            self._emit(
                "run.finished",
                (run_id,),
                at,
                {
                    "thread": thread,
                    "run": run_id,
                    # Rolled back before it ended: undone, as a cancel is.
                    "status": RUN_FINISHED.get(status, "cancelled"),
                    "summary": text or (error if status == "failed" else None) or "",
                    "error": error if status == "failed" else None,
                    "failure_class": failure_class,
                    # Cut by a restart's recovery, not stopped by anyone (facts §7).
                    "cause": "restart" if restart and status == "cancelled" else None,
                },
            )
            known.pop("wakes", None)  # ended without starting: its wakes never arrived
            self._promote(run_id, thread)
            self.mem.ended[run_id] = at
            bound(self.mem.ended, KEEP_ENDED)
            if known["requested"]:
                del runs[run_id]
            else:
                known["finished"] = True  # forgotten once its start message is read
        elif status not in RUN_UNDER_WAY:
            self._unknown_value(f"run.status:{status}")

    def _cohort(self, run_id: str, p: dict) -> None:
        """A delegating run's completion cohort (P006, K33): how many deliveries of its
        tasks' results T3 has settled. T3 rewrites it on the run long after it ended."""
        cohort = p.get("delegatedCompletion")
        settled = cohort.get("settledDeliveryCount") if isinstance(cohort, dict) else None
        if isinstance(settled, int) and not isinstance(settled, bool) and settled >= 0:
            self.mem.cohorts[run_id] = settled
            bound(self.mem.cohorts, KEEP_RUNS)

    def _request(self, run_id, thread, ordinal, p, occurred, known) -> None:
        at = self._at(p.get("requestedAt"), p.get("createdAt"), occurred)
        if at is None:
            return
        start = _text(p.get("userMessageId")) or None
        trigger, wakes = self._trigger(thread, ordinal, start)
        if trigger is None:
            # Its start message is not read yet: ask again when it is.
            known["held"] = {
                k: p.get(k) for k in ("id", "threadId", "ordinal", "requestedAt", "userMessageId")
            }
            waiting = self.mem.pending.setdefault(start, [])
            if run_id not in waiting:
                waiting.append(run_id)
            return
        known["requested"] = True
        known.pop("held", None)
        self._emit(
            "run.requested",
            (run_id,),
            at,
            {"thread": thread, "run": run_id, "ordinal": ordinal, "trigger": trigger},
        )
        if wakes:
            known["wakes"] = wakes
            if known.get("started"):
                self._deliver(run_id, known, known.get("started_at") or at)

    def _deliver(self, run_id: str, known: dict, at: str) -> None:
        """A wake reaches the run it queued when that run starts, not when it is queued
        (a queued run can be cancelled, held, or never start)."""
        for wake in known.pop("wakes", None) or ():
            self._emit("wake.delivered", (wake,), at, {"wake": wake, "run": run_id})

    def _trigger(self, thread: str, ordinal: int, start: str | None):
        """The run's trigger and the wakes it delivers; (None, []) to wait for the
        message that started it."""
        task = self.mem.children.get(thread)
        if start is None:
            if ordinal == 1 and task:
                return {"kind": "delegation", "task": task}, []
            return {"kind": "other"}, []
        messages = self.mem.messages
        entry = messages.get(start)
        if entry is None and self.lookup is not None:
            payload = self.lookup.message(start)
            if isinstance(payload, dict) and _text(payload.get("id")) == start:
                entry = self._remember(
                    payload,
                    start,
                    _text(payload.get("threadId")),
                    payload.get("role"),
                    None,
                    None,
                )
        if entry is None:
            return None, []
        if isinstance(entry, list):
            wakes, delivered = entry
            entry[1] = 1
            if not wakes:
                return {"kind": "other"}, []  # a notice not understood
            return {"kind": "wake", "wake": wakes[0]}, [] if delivered else wakes
        messages.pop(start, None)
        if entry == "s":
            return {"kind": "scheduled"}, []
        if ordinal == 1 and task:
            return {"kind": "delegation", "task": task}, []  # the prompt started it
        return {"kind": "message"}, []

    def _text_of(self, run: str, when: str, text: str) -> None:
        """T3's choice of a run's result: its latest non-empty assistant text."""
        last = self.mem.texts.get(run)
        if last is None or (text.strip() and (not last[1].strip() or when >= last[0])):
            self.mem.texts[run] = [when, text]

    def _final_text(self, run_id: str) -> str:
        last = self.mem.texts.pop(run_id, None)
        if last is not None:
            return last[1]
        text = self.lookup.last_assistant_text(run_id) if self.lookup else None
        return text or ""

    # --- turn items: errors, commands that outlive their run, activity --------------

    def turn_item(self, p: dict, occurred: str | None) -> None:
        kind, run = p.get("type"), _text(p.get("runId"))
        if kind == "error" and run:
            failure = p.get("failure") if isinstance(p.get("failure"), dict) else {}
            message = _text(failure.get("message")) or _text(p.get("title"))
            if message:
                self.mem.errors[run] = message
                bound(self.mem.errors, KEEP_RUNS)
            failure_class = _text(failure.get("class"))[:200]
            if failure_class:
                # T3's own kind of failure (a usage limit, a transport fault): the rules
                # tell an account limit from a passing fault by it.
                if failure_class not in FAILURE_CLASSES:
                    self._unknown_value(f"failure.class:{failure_class}")
                self.mem.classes[run] = failure_class
                bound(self.mem.classes, KEEP_RUNS)
        elif kind == "command_execution" and run:
            self.command(p, run, occurred)
        elif kind == "dynamic_tool" and is_delegate_call(p):
            self.delegate_call(p, occurred)
        elif kind == "assistant_message" and run in self.mem.runs:
            # A build that writes replies as items only: the item is the run's text.
            text = _text(p.get("text"))
            if text and run not in self.mem.texts:
                self._text_of(run, _text(p.get("updatedAt")), text)
        self.activity(p, occurred)

    def delegate_call(self, p: dict, occurred: str | None) -> None:
        """An agent's `delegate_task` call (a `dynamic_tool` item of the parent's run):
        `task.requested` when first seen, whether or not a task ever comes of it. Its
        `client_request_id` is the agent's own `clientRequestId` (T3 keys the task's
        command, and so the task id, by it), else the item's id; the task it made says
        the same (`_request_of`), found by that key, by the call's output (`taskId`), or
        as the open call of the same run with the task's title."""
        item_key, thread = _text(p.get("id")), _text(p.get("threadId"))
        if not item_key or not thread:
            self._unknown_value("dynamic_tool.id")
            return
        arguments = _arguments(p.get("input"))
        key = _text(arguments.get("clientRequestId"))[:500] or item_key
        requests = self.mem.requests
        request = requests.get(key)
        if request is None:
            at = self._at(p.get("startedAt"), p.get("createdAt"), p.get("updatedAt"), occurred)
            if at is None:
                return
            title = _text(arguments.get("title"))[:500] or None
            request = requests[key] = {
                "thread": thread,
                "run": _text(p.get("runId")) or None,
                "title": title,
                "task": None,
            }
            bound(requests, KEEP_REQUESTS)
            self._emit(
                "task.requested",
                (key,),
                at,
                {
                    "parent_thread": thread,
                    "parent_run": request["run"],
                    "client_request_id": key,
                    "title": title,
                },
            )
        output = _arguments(p.get("output"))
        named = output.get("taskId")
        if request["task"] is None and not named and p.get("status") == "failed":
            self._refused(p, request, key, output, occurred)
        if request["task"] is None and isinstance(named, str) and named:
            request["task"] = named
            task = self.mem.tasks.get(named)
            if task is not None and task.get("request") != key and task.get("said"):
                # Told before this call named it: told again, now with the call's id.
                task["request"], task["late_request"] = key, 1
                title, prompt = task.pop("said")
                task["told_request"] = key
                self._delegated(named, {"title": title, "prompt": prompt or None}, task)

    def _refused(self, p: dict, request: dict, key: str, output: dict, occurred) -> None:
        """A call that failed and named no task: T3 (or the provider) refused it, and
        no task will come of it (`tool.rejected`, once). T3's refusal is its MCP failure
        `{code, message}`; Codex stores a failed call's `{error: message}`."""
        if request.get("refused"):
            return
        at = self._at(p.get("completedAt"), p.get("updatedAt"), occurred)
        if at is None:
            return
        error = output.get("error")
        nested = error if isinstance(error, dict) else {}
        code = _first_text(output.get("code"), nested.get("code")) or "failed"
        message = _first_text(
            output.get("message"), nested.get("message"), error if isinstance(error, str) else None
        )
        request["refused"] = 1
        self._emit(
            "tool.rejected",
            (key,),
            at,
            {
                "thread": request["thread"],
                "tool": DELEGATE_TOOL,
                "code": code[:200],
                "message": message or "delegate_task failed without a task.",
            },
        )

    def _request_of(self, task_id: str, p: dict, known: dict) -> str | None:
        """The `client_request_id` of the call that made this task, if any is known."""
        requests = self.mem.requests
        key = request_key(task_id)
        if key is not None and key in requests:
            requests[key]["task"] = task_id
            return key
        for other, request in requests.items():
            if request["task"] == task_id:
                return other
        title = _text(p.get("title")) or None
        for other, request in requests.items():
            if (
                request["task"] is None
                and not request.get("refused")
                and request["thread"] == known["parent"]
                and request["run"] == known["run"]
                and request["title"] == title
            ):
                request["task"] = task_id
                return other
        # No call seen (a build that writes none, or a command sent by a client): the
        # agent's key T3 made the task id from, when it was made by the agents' tool.
        return key

    def command(self, p: dict, run: str, occurred: str | None) -> None:
        """A command item of a run is background work when it outlives the run: T3 (and
        the provider) then wake the thread when it ends, by a continuation that names no
        item, so the item is told when its run finishes and matched to that wake."""
        item_key, thread = _text(p.get("id")), _text(p.get("threadId"))
        if not item_key or not thread:
            return
        commands = self.mem.commands
        status = p.get("status")
        final = status in ITEM_FINISHED
        known = commands.get(item_key)
        label = _first_line(p.get("input")) or _text(p.get("title")) or None
        if known is None:
            outlived = False
            if self._importing and run in self._run_ends:
                outlived = not final or _text(p.get("completedAt")) > self._run_ends[run]
                if not outlived:
                    return
            elif final:
                return  # began and ended inside its run (or before this follower)
            else:
                outlived = run in self.mem.ended  # started once its run was over
            started = self._at(p.get("startedAt"), p.get("updatedAt"), occurred)
            if started is None:
                return
            known = commands[item_key] = [thread, run, label, started, 0]
            bound(commands, KEEP_RUNS)
            if outlived:
                self._promote_one(item_key, known)
        if final:
            del commands[item_key]
            if known[4]:
                at = self._at(p.get("completedAt"), p.get("updatedAt"), occurred)
                if at is None:
                    return
                item = item_id(thread, item_key)
                self._emit(
                    "background.finished",
                    (item,),
                    at,
                    {"thread": thread, "item": item, "status": ITEM_FINISHED[status]},
                )
                self._departed(thread, item, "command", label, None, at)

    def _promote(self, run_id: str, thread: str) -> None:
        for item_key, known in list(self.mem.commands.items()):
            if known[1] == run_id and not known[4]:
                self._promote_one(item_key, known)

    def _promote_one(self, item_key: str, known: list) -> None:
        thread, run, label, started, _ = known
        if self.mem.build.get("roster") and self._listed(thread):
            # The roster's entry stands for this work. A roster that lists nothing (an
            # import after the entry left) leaves the command item as the only trace.
            return
        known[4] = 1
        item = item_id(thread, item_key)
        self._emit(
            "background.started",
            (item,),
            started,
            {"thread": thread, "item": item, "kind": "command", "run": run, "label": label},
        )

    def _listed(self, thread: str) -> bool:
        """Does a roster of this thread list command work now?"""
        for roster in map(self.mem.rosters.get, self._rosters_of(thread)):
            if roster and any(
                entry[0] in ("command", "other") for entry in roster["tasks"].values()
            ):
                return True
        return False

    def work_cancelled(self, p: dict, occurred: str | None, thread: str | None = None) -> None:
        """Restart recovery cancelled work listed on a run (newer builds): each listed
        roster entry still known is finished, cancelled."""
        work = p.get("restartCancelledBackgroundWork")
        thread = thread or _text(p.get("threadId"))
        at = self._at(p.get("updatedAt"), occurred)
        if not isinstance(work, list) or not thread or at is None:
            self.skipped += 1
            return
        for entry in work:
            task_id = _text(entry.get("id")) if isinstance(entry, dict) else ""
            for provider_thread in list(self._rosters_of(thread)):
                roster = self.mem.rosters.get(provider_thread)
                if not roster or task_id not in roster["tasks"]:
                    continue
                kind, description, child = roster["tasks"].pop(task_id)
                item = item_id(thread, task_id)
                self._emit(
                    "background.finished",
                    (item,),
                    at,
                    {"thread": thread, "item": item, "status": "cancelled"},
                )
                self._departed(thread, item, kind, description, child, at)

    def activity(self, p: dict, occurred: str | None) -> None:
        """Output of a run under way (a message, a tool call): at most one per 30 s."""
        run, thread = _text(p.get("runId")), _text(p.get("threadId"))
        known = self.mem.runs.get(run) if run else None
        if known is None or not thread:
            return
        at = self._at(p.get("updatedAt"), occurred)
        if at is None:
            return
        bucket = int(_parse(at).timestamp()) // ACTIVITY_EVERY
        if known.get("activity") == bucket:
            return
        known["activity"] = bucket
        self._emit("run.activity", (run, bucket), at, {"thread": thread, "run": run})

    # --- context transfers: result runs and wait-mode deliveries --------------------

    def transfer(self, p: dict, occurred: str | None) -> None:
        transfer_id = _text(p.get("id"))
        if p.get("type") != "subagent_result":
            self.skipped += 1
            return
        if not transfer_id:
            self._unknown_value("context-transfer.id")
            return
        source_thread = _text(p.get("sourceThreadId"))
        target_thread = _text(p.get("targetThreadId"))
        point = p.get("sourcePoint") if isinstance(p.get("sourcePoint"), dict) else {}
        source_run = _text(point.get("runId")) or None
        target_run = _text(p.get("targetRunId")) or None
        task_id = self._transfer_task(p, source_thread, target_thread)
        if task_id is None:
            self._unknown_value("context-transfer.task")
            return
        known = self.mem.tasks[task_id]
        transfers = self.mem.transfers
        done = transfers.get(transfer_id, 0)  # 1: its result run told; 2: its delivery
        at = self._at(p.get("createdAt"), p.get("updatedAt"), occurred)
        if at is None:
            return
        if source_run and not done & REPORTED:
            known["result_run"] = source_run
            if known["status"] in TERMINAL:
                # The same fact as the finalizing report, now with its result run: at the
                # same `at` its id extends that report's, so it sorts after and wins.
                first = event_id("task.reported", task_id, known["status"], at)
                suffix = ":run:" + event_id("", transfer_id).rsplit(":", 1)[1]
                self._report(task_id, known, known["status"], at, key=None, told_as=first + suffix)
            done |= REPORTED
        transfers[transfer_id] = done
        bound(transfers, KEEP_TRANSFERS)
        if done & DELIVERED or target_run is None:
            return
        waits = known["waits"]
        if waits is None:
            # No stored mode: a result that went back into the very run that delegated
            # the task went back in the tool call.
            waits = target_run == known["run"]
        if not waits:
            return
        ended = self.mem.ended.get(target_run)
        if isinstance(ended, str) and ended < at:
            # The delegating run ended before the result: the blocking call died (the
            # client's ~5 minute limit), so the tool call handed nothing.
            return
        text = known["result"] or _text(p.get("summary")) or _text(p.get("text")) or None
        status = known["status"]
        self._emit(
            "wake.queued",
            (transfer_id,),
            at,
            {
                "wake": transfer_id,
                "thread": target_thread or known["parent"],
                "source": {"kind": "task", "task": task_id, "thread": source_thread or None},
                "summary": text,
                "outcome": status if status in WAKE_OUTCOMES else None,
            },
        )
        self._emit("wake.delivered", (transfer_id,), at, {"wake": transfer_id, "run": target_run})
        transfers[transfer_id] = done | DELIVERED

    def _transfer_task(self, p: dict, source_thread: str, target_thread: str) -> str | None:
        tasks = self.mem.tasks
        for key in ("subagentId", "taskId", "nodeId"):
            named = _text(p.get(key))
            if named in tasks:
                return named
        matching = [
            (tasks[task_id]["at"], task_id)
            for task_id in self._tasks_of(source_thread)
            if task_id in tasks
            and tasks[task_id]["child"] == source_thread
            and (not target_thread or tasks[task_id]["parent"] == target_thread)
        ]
        return max(matching)[1] if matching else None

    # --- helpers --------------------------------------------------------------------

    def _tasks_of(self, child: str) -> list[str]:
        """The tasks whose child thread this is (a task and its follow-ups), sorted."""
        if self._tasks_by_child is None:
            self._tasks_by_child = {}
            for task_id, known in self.mem.tasks.items():
                if known["child"]:
                    self._tasks_by_child.setdefault(known["child"], set()).add(task_id)
        return sorted(self._tasks_by_child.get(child, ()))

    def _rosters_of(self, thread: str) -> set[str]:
        """The provider threads whose roster is this app thread's."""
        if self._rosters_by_thread is None:
            self._rosters_by_thread = {}
            for provider_thread, roster in self.mem.rosters.items():
                self._rosters_by_thread.setdefault(roster["thread"], set()).add(provider_thread)
        return self._rosters_by_thread.setdefault(thread, set())

    def _natives_of(self, thread: str) -> set[str]:
        """The native subagents started in this thread."""
        if self._natives_by_thread is None:
            self._natives_by_thread = {}
            for sub_id, native in self.mem.natives.items():
                self._natives_by_thread.setdefault(native["thread"], set()).add(sub_id)
        return self._natives_by_thread.setdefault(thread, set())

    def _emit(
        self, event_type: str, key, at: str, data: dict, *, suffix: str = "", told_as=None
    ) -> None:
        """Tell one fact; its id from `key` (or `told_as`, an id made by the caller)."""
        event = {
            "id": told_as or event_id(event_type, *key) + suffix,
            "type": event_type,
            "at": at,
            "data": {k: v for k, v in data.items() if v is not None},
        }
        if self.env:
            event["env"] = self.env
        self.out.append(event)

    def _at(self, *candidates: Any) -> str | None:
        """The first well-formed timestamp of the candidates (T3's own fields before the
        row's `occurred_at`) that is a real time inside the window the supervisor accepts
        (core/times.py): one T3 got wrong (9999, 2026-02-30) is counted and passed over
        for the next. None, counted, when there is none."""
        for value in candidates:
            if not (isinstance(value, str) and ISO.match(value)):
                continue
            problem = _time_problem(value)
            if problem is None:
                return value
            self._unknown_value(f"timestamp:{problem}")
        self._unknown_value("timestamp")
        return None

    def _unknown_value(self, name: str) -> None:
        self.unknown_values += 1
        self.unknown[name] += 1

    def _unknown_row(self, name: str) -> None:
        self.unknown_rows += 1
        self.unknown[name] += 1


def coalesced(events: list[dict]) -> list[dict]:
    """The events of a batch less the activity of runs that end in the same batch: a
    run's end says all its activity did (catching up, that is one event in eight)."""
    ended = {e["data"]["run"] for e in events if e["type"] == "run.finished"}
    if not ended:
        return events
    return [e for e in events if e["type"] != "run.activity" or e["data"]["run"] not in ended]


# Builds before `notification` (J, P006): a wake is a user message the server or the
# provider wrote as the agent (command `provider-continuation:…`); a task's names its id.
TASK_WAKE = re.compile(r"^Delegated tasks? ")
TASK_ID_IN_TEXT = re.compile(r"taskId (\S+?)(?= |\.?$)")
TASK_IDS_LISTED = re.compile(r"^Delegated tasks? (.+?) reached terminal states?\.")
LEGACY_OUTCOME = re.compile(r"\b(completed|ended with status (\w+))\b")


def legacy_notification(p: dict) -> dict | None:
    """The `notification` a newer build would have written on this message, or None
    when it is not a wake."""
    if p.get("createdBy") != "agent" or p.get("creationSource") not in ("server", "provider"):
        return None
    text = _text(p.get("text")).strip()
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


def is_delegate_call(p: dict) -> bool:
    """Is this `dynamic_tool` item a call of the agents' `delegate_task`?"""
    name = _text(p.get("toolName"))
    return bool(name) and TOOL_NAME_PARTS.split(name)[-1] == DELEGATE_TOOL


def _arguments(value: Any) -> dict:
    """A tool call's input or output as an object (providers store either, some as
    JSON text)."""
    if isinstance(value, str):
        value = decoded(value)
    if isinstance(value, list):
        # An MCP result's content blocks: the first whose text is a JSON object.
        for block in value:
            text = block.get("text") if isinstance(block, dict) else None
            if isinstance(decoded(text) if isinstance(text, str) else None, dict):
                return decoded(text)
    return value if isinstance(value, dict) else {}


def _waits(p: dict) -> bool | None:
    """Whether the task's result goes back in the delegating call, when a field says so:
    a `mode`, or the parent-wake policy (`settled_only` is wait-mode delegation's)."""
    mode = p.get("mode")
    if mode in ("wait", "async"):
        return mode == "wait"
    wake = p.get("completionWake")
    if wake in ("always", "settled_only"):
        return wake == "settled_only"
    return None


def _item_kind(kind: str, source: dict) -> str:
    if kind in ("command", "background_command"):
        return "command"
    if kind == "monitor":
        return "monitor"
    if kind == "subagent" or source.get("work") == "subagent":
        return "subagent"
    return "other"


def _class_of(failure: list) -> str | None:
    return failure[2] if len(failure) > 2 else None


def _names(text: str, description: str | None) -> bool:
    """Does the (normalized) notice text name the entry's description?"""
    return bool(description) and _normalized(description) in text


def _normalized(text: str | None) -> str:
    return " ".join((text or "").split()).casefold()
