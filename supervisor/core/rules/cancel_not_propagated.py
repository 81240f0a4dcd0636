"""cancel_not_propagated: the task says `cancelled`, yet the work it owns goes on (kilocode
#11758, agentscope-java #2408 and #2062, hermes PR #110505, shelley #170: a cancel that
stopped the task's node but not its child, background items or sub-tasks).

Raised on T whose current report is `cancelled` (not `cause: "restart"`: that cancel is
left_by_restart's) when, `cancel_grace` after that report's `at`, something T owns is
still unfinished: an owned run, an owned background item (`awaited: false` ones too: a
cancel stops all of the task's work, not only what its result waits on), or a task
delegated from an owned run whose current report is not terminal. An owned run requested
after the report is such work from its request on. Work an operator started by hand
after the cancel (a continue of T, clause 5 of ownership, and whatever that run went on
to start) is the operator's own choice and never counts. It resolves when nothing owned
is unfinished, or when T's current report is no longer `cancelled`."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.contract.times import after
from supervisor.core.facts.ownership import (
    delegated_tasks,
    delegating_run_id,
    item_run_id,
    owned_items,
    owned_runs,
    run_name,
)
from supervisor.core.facts.snapshot import (
    DetectionSettings,
    Finding,
    ReportView,
    RunView,
    Snapshot,
    TaskView,
)

from .task_deadlines import coming, opened

KIND = "cancel_not_propagated"


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    return opened(snap, settings, now, _due)


def due_times(snap: Snapshot, settings: DetectionSettings, now: datetime) -> dict:
    return coming(snap, settings, now, _due)


def _due(snap: Snapshot, settings: DetectionSettings, task: TaskView):
    report = task.current_report
    if report is None or report.status != "cancelled" or report.cause == "restart":
        return None
    open_runs, open_items, open_tasks = unfinished_work(snap, task, report)
    if not (open_runs or open_items or open_tasks):
        return None
    parts, events = [], [report.event_id]
    if open_runs:
        late = [run for run in open_runs if _requested_after(run, report)]
        words = ", ".join(run_name(run) for run in open_runs)
        if late:
            words += f" ({', '.join(run_name(run) for run in late)} requested after the cancel)"
        parts.append(f"the child's {words} still running")
        events += [run.requested_event or run.started_event for run in open_runs]
    if open_items:
        parts.append(f"background item {', '.join(item.id for item in open_items)} still open")
        events += [item.started_event for item in open_items]
    if open_tasks:
        parts.append(f"task {', '.join(sub.id for sub in open_tasks)} it delegated not ended")
        events += [sub.delegated_event for sub in open_tasks]
    return after(report.at, settings.cancel_grace), Finding(
        KIND,
        "task",
        task.id,
        {
            "events": [e for e in events if e is not None],
            "text": (
                f"The task was reported cancelled at {report.at.isoformat()}, yet "
                f"{'; '.join(parts)}: the cancel did not reach that work."
            ),
            "runs": [run.id for run in open_runs],
            "items": [item.id for item in open_items],
            "tasks": [sub.id for sub in open_tasks],
        },
    )


def unfinished_work(snap: Snapshot, task: TaskView, report: ReportView) -> tuple[list, list, list]:
    """What T owns that is still going after its cancelled `report`: (runs, background
    items, delegated tasks whose report is not terminal), leaving out an operator's
    continue by hand after the cancel and what it started."""
    by_hand = _operators_runs(snap, task, report)
    runs = [run for run in owned_runs(snap, task) if run.id not in by_hand]
    kept = {run.id for run in runs}
    open_runs = [run for run in runs if not run.finished]
    open_items = [
        item
        for item in owned_items(snap, task)
        if not item.finished and item_run_id(snap, item) in kept
    ]
    open_tasks = [
        sub
        for sub in delegated_tasks(snap, task)
        if delegating_run_id(snap, sub) in kept
        and (sub.current_report is None or not sub.current_report.terminal)
    ]
    return open_runs, open_items, open_tasks


def _requested_after(run: RunView, report: ReportView) -> bool:
    return run.requested_at is not None and run.requested_at > report.at


def _operators_runs(snap: Snapshot, task: TaskView, report: ReportView) -> set[str]:
    """The owned runs an operator's continue of T by hand after the cancel started, and
    those their work started in turn (restarts, items' wakes, sub-tasks' wakes)."""
    chosen: set[str] = set()
    for run in owned_runs(snap, task):  # by ordinal: a run's cause comes before it
        if _by_hand(snap, task, run, report) or _caused_by(snap, run, chosen):
            chosen.add(run.id)
    return chosen


def _by_hand(snap: Snapshot, task: TaskView, run: RunView, report: ReportView) -> bool:
    if run.trigger_kind != "wake" or not _requested_after(run, report):
        return False
    wake = snap.wakes.get(run.trigger_ref or "")
    return wake is not None and wake.source_kind == "manual" and wake.source_task == task.id


def _caused_by(snap: Snapshot, run: RunView, chosen: set[str]) -> bool:
    kind, ref = run.trigger_kind, run.trigger_ref or ""
    if kind == "restart":
        return ref in chosen
    if kind == "background":
        item = snap.items.get(ref)
        return item is not None and item_run_id(snap, item) in chosen
    if kind == "wake":
        wake = snap.wakes.get(ref)
        if wake is None:
            return False
        if wake.source_kind == "background":
            item = snap.items.get(wake.source_item or "")
            return item is not None and item_run_id(snap, item) in chosen
        if wake.source_kind == "task":
            source = snap.tasks.get(wake.source_task or "")
            return source is not None and delegating_run_id(snap, source) in chosen
    return False
