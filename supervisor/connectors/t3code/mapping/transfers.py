"""A `subagent_result` context transfer names the task's result run, and for a task
whose result went back in the tool call (`wait`) it is the delivery itself.
"""

from __future__ import annotations

from . import tasks
from .fields import string
from .ids import digest, event_id
from .memory import KEEP_TRANSFERS, bound
from .state import MapState
from .statuses import TERMINAL, WAKE_OUTCOMES

REPORTED, DELIVERED = 1, 2  # what a transfer has told


def transfer(state: MapState, p: dict, occurred: str | None) -> None:
    """A context transfer's row: a `subagent_result` tells its task's result run once,
    and (wait mode) the delivery once; another type carries nothing here."""
    transfer_id = string(p.get("id"))
    if p.get("type") != "subagent_result":
        state.skipped += 1
        return
    if not transfer_id:
        state.unknown_value("context-transfer.id")
        return
    source_thread = string(p.get("sourceThreadId"))
    target_thread = string(p.get("targetThreadId"))
    point = p.get("sourcePoint") if isinstance(p.get("sourcePoint"), dict) else {}
    source_run = string(point.get("runId")) or None
    target_run = string(p.get("targetRunId")) or None
    task_id = task_of(state, p, source_thread, target_thread)
    if task_id is None:
        state.unknown_value("context-transfer.task")
        return
    known = state.memory.tasks[task_id]
    transfers = state.memory.transfers
    done = transfers.get(transfer_id, 0)  # 1: its result run told; 2: its delivery
    at = state.at(p.get("createdAt"), p.get("updatedAt"), occurred)
    if at is None:
        return
    if source_run and not done & REPORTED:
        known["result_run"] = source_run
        if known["status"] in TERMINAL:
            # The same fact as the finalizing report, now with its result run: at the
            # same `at` its id extends that report's, so it sorts after and wins.
            first = event_id("task.reported", task_id, known["status"], at)
            suffix = ":run:" + digest(transfer_id)
            tasks.report(
                state, task_id, known, known["status"], at, key=None, told_as=first + suffix
            )
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
    ended = state.memory.ended.get(target_run)
    if isinstance(ended, str) and ended < at:
        # The delegating run ended before the result: the blocking call died (the
        # client's ~5 minute limit), so the tool call handed nothing.
        return
    text = known["result"] or string(p.get("summary")) or string(p.get("text")) or None
    status = known["status"]
    state.emit(
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
    state.emit("wake.delivered", (transfer_id,), at, {"wake": transfer_id, "run": target_run})
    transfers[transfer_id] = done | DELIVERED


def task_of(state: MapState, p: dict, source_thread: str, target_thread: str) -> str | None:
    """The task whose result this is: the one it names, else the latest task of the
    source (child) thread delegated from the target thread."""
    tasks = state.memory.tasks
    for key in ("subagentId", "taskId", "nodeId"):
        named = string(p.get(key))
        if named in tasks:
            return named
    matching = [
        (tasks[task_id]["at"], task_id)
        for task_id in state.tasks_of(source_thread)
        if task_id in tasks
        and tasks[task_id]["child"] == source_thread
        and (not target_thread or tasks[task_id]["parent"] == target_thread)
    ]
    return max(matching)[1] if matching else None
