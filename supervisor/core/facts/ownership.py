"""Ownership as the rules, pages and actions read it (contract §4): which child runs a
task owns (`core.facts.owning`, causal) and what it still owes; and, as thin readers of
the task's reading (`core.facts.reading`, where it is decided), what became of their
results. Pure functions over a Snapshot.
"""

from __future__ import annotations

from supervisor.core.facts import reading
from supervisor.core.facts.owning import (
    EARLIEST,
    LATEST,
    Owning,
    awaited,
    child_thread,
    delegating_run_id,
    item_run_id,
    owned_runs,
    owning,
    run_requested_by,
)
from supervisor.core.facts.reading import Handing, has_result, normalized
from supervisor.core.facts.snapshot import ItemView, RunView, Snapshot, TaskView, WakeView

__all__ = [
    "EARLIEST",
    "LATEST",
    "Handing",
    "Owning",
    "awaited",
    "child_thread",
    "child_thread_task",
    "delegated_tasks",
    "delegating_run_id",
    "delivered_by_hand",
    "handed",
    "has_reached_parent",
    "has_result",
    "item_run_id",
    "judged_tasks",
    "known_tasks",
    "latest_result",
    "latest_result_run",
    "normalized",
    "open_delegated_tasks",
    "owned_items",
    "owned_runs",
    "owning",
    "reaching_wake",
    "result_run",
    "run_name",
    "run_requested_by",
    "unfinished_owned_items",
    "unfinished_owned_runs",
]


def run_name(run: RunView | None) -> str:
    """A run as the task page names it: by its ordinal ("run 2"), never by its raw id."""
    if run is None:
        return "no run"
    if run.ordinal is None:
        return "a run not requested yet"
    return f"run {run.ordinal}"


def known_tasks(snap: Snapshot) -> list[TaskView]:
    """The tasks whose `task.delegated` arrived: the only task subjects of flags, by id.
    Every rule asks: sorted once per snapshot (a copy, so no caller changes it)."""
    if "known_tasks" not in snap.memo:
        snap.memo["known_tasks"] = sorted(
            (task for task in snap.tasks.values() if task.known), key=lambda t: t.id
        )
    return list(snap.memo["known_tasks"])


def judged_tasks(snap: Snapshot) -> list[TaskView]:
    """The known tasks whose flags this evaluation decides: every one, or the ones the
    snapshot was loaded to judge (`Snapshot.judged`); the others are only read."""
    key = ("judged_tasks", snap.judged)
    if key not in snap.memo:
        known = known_tasks(snap)
        snap.memo[key] = known if snap.judged is None else [t for t in known if t.id in snap.judged]
    return list(snap.memo[key])


def child_thread_task(snap: Snapshot, thread: str | None) -> TaskView | None:
    """The known task whose child thread is `thread`: the one that is not a follow-up,
    else the earliest delegated."""
    if thread is None:
        return None
    if "child_thread_task" not in snap.memo:
        # Each thread's task, found for every thread at once: orphan_wake asks per wake.
        by_thread: dict[str, TaskView] = {}
        for task in known_tasks(snap):
            found = child_thread(snap, task)
            if found is not None and (
                found not in by_thread or _first_claim(task) < _first_claim(by_thread[found])
            ):
                by_thread[found] = task
        snap.memo["child_thread_task"] = by_thread
    return snap.memo["child_thread_task"].get(thread)


def _first_claim(task: TaskView) -> tuple:
    return (task.follow_up_of is not None, task.delegated_at or LATEST, task.id)


def owned_items(snap: Snapshot, task: TaskView) -> list[ItemView]:
    """Background items started by T's owned runs, `awaited: false` ones included."""
    owned = {run.id for run in owned_runs(snap, task)}
    thread = child_thread(snap, task) or ""
    items = [
        item for item in snap.items_by_thread.get(thread, []) if item_run_id(snap, item) in owned
    ]
    return sorted(items, key=lambda i: (i.started_at or EARLIEST, i.id))


def delegated_tasks(snap: Snapshot, task: TaskView) -> list[TaskView]:
    """Tasks delegated from T's owned runs (T's grandchildren's tasks)."""
    owned = {run.id for run in owned_runs(snap, task)}
    thread = child_thread(snap, task) or ""
    subtasks = [
        sub
        for sub in snap.tasks_by_parent_thread.get(thread, [])
        if sub.known and delegating_run_id(snap, sub) in owned
    ]
    return sorted(subtasks, key=lambda t: (t.delegated_at or EARLIEST, t.id))


def unfinished_owned_runs(snap: Snapshot, task: TaskView) -> list[RunView]:
    return [run for run in owned_runs(snap, task) if not run.finished]


def unfinished_owned_items(snap: Snapshot, task: TaskView) -> list[ItemView]:
    """Owned items T is waiting on: not finished and not started with `awaited: false`."""
    return [item for item in owned_items(snap, task) if awaited(item) and not item.finished]


def open_delegated_tasks(snap: Snapshot, task: TaskView) -> list[TaskView]:
    """Tasks delegated from T's owned runs whose current report is not terminal (or absent)."""
    return [
        sub
        for sub in delegated_tasks(snap, task)
        if sub.current_report is None or not sub.current_report.terminal
    ]


# --- what became of the results: thin readers of core.facts.reading -----------------


def latest_result_run(snap: Snapshot, task: TaskView) -> RunView | None:
    """T's latest result's run, by the contract's words."""
    return reading.latest_result_by_contract(snap, task)


def latest_result(snap: Snapshot, task: TaskView) -> str | None:
    """T's latest result's text, by the contract's words."""
    run = reading.latest_result_by_contract(snap, task)
    return run.summary if run else None


def result_run(snap: Snapshot, task: TaskView) -> RunView | None:
    """The run T's current report's text came from, by the contract's words."""
    return reading.result_run_by_contract(snap, task)


def handed(snap: Snapshot, task: TaskView) -> list[Handing]:
    """The texts handed to the parent for T, by the contract's words."""
    return reading.handed_by_contract(snap, task)


def delivered_by_hand(snap: Snapshot, task: TaskView, *, any_text: bool = False) -> list[Handing]:
    """The deliveries by hand of T made (the contract's "delivered" meaning)."""
    return reading.deliveries_by_hand(snap, task, any_text=any_text)


def reaching_wake(snap: Snapshot, task: TaskView, text: str | None) -> WakeView | None:
    """The first wake that brought `text` to T's parent, by the contract's words."""
    return reading.reaching_wake_by_contract(snap, task, text)


def has_reached_parent(snap: Snapshot, task: TaskView, text: str | None) -> bool:
    """Whether `text` reached T's parent, by the contract's words."""
    return reading.reached_by_contract(snap, task, text)
