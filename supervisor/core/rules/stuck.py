"""stuck: an unfinished task whose owned work went quiet, or whose child never woke."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from supervisor.core.contract.times import after
from supervisor.core.facts.ownership import (
    awaited,
    child_thread,
    delegated_tasks,
    judged_tasks,
    owned_items,
    owned_runs,
    run_name,
)
from supervisor.core.facts.snapshot import (
    DetectionSettings,
    Finding,
    RunView,
    Snapshot,
    TaskView,
    WakeView,
)

from .silent_background_item import waited_until

KIND = "stuck"


@dataclass(frozen=True)
class Happening:
    """Something owned that happened: it restarts T's idle clock."""

    at: datetime
    event_id: str | None
    what: str


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    found = [_finding(snap, settings, task, now) for task in _unsettled(snap)]
    return [finding for finding in found if finding is not None]


def due_times(snap: Snapshot, settings: DetectionSettings, now: datetime) -> dict:
    """("task", id) -> the earliest later time the idle clock or a wake start runs out."""
    due = {}
    for task in _unsettled(snap):
        idle_due = _idle_due(snap, settings, task)
        times = [idle_due[0]] if idle_due else []
        times += [when for when, _ in _unstarted_wakes(snap, settings, task)]
        later = [when for when in times if when > now]
        if later:
            due[("task", task.id)] = min(later)
    return due


def _unsettled(snap: Snapshot) -> list[TaskView]:
    """Known tasks whose current report is not terminal, or that have none."""
    return [
        task
        for task in judged_tasks(snap)
        if task.current_report is None or not task.current_report.terminal
    ]


def _finding(
    snap: Snapshot, settings: DetectionSettings, task: TaskView, now: datetime
) -> Finding | None:
    events, sentences, values = [], [], {}
    idle_due = _idle_due(snap, settings, task)
    if idle_due is not None and idle_due[0] <= now:
        last = idle_due[1]
        events.append(last.event_id)
        sentences.append(f"Nothing owned has happened since {last.what} at {last.at.isoformat()}.")
        values["idle_since"] = last.at.isoformat()
    late = [wake for when, wake in _unstarted_wakes(snap, settings, task) if when <= now]
    if late:
        events += [wake.queued_event for wake in late]
        sentences.append(
            f"Wake {', '.join(w.id for w in late)} to the child thread has not started a run."
        )
        values["unstarted_wakes"] = [wake.id for wake in late]
    if not sentences:
        return None
    return Finding(
        KIND,
        "task",
        task.id,
        {"events": [e for e in events if e is not None], "text": " ".join(sentences), **values},
    )


# (a) the idle clock


def _idle_due(
    snap: Snapshot, settings: DetectionSettings, task: TaskView
) -> tuple[datetime, Happening] | None:
    """When T will have been idle for `stuck_after`, and the last owned happening; None
    while a wait on a delegated task keeps the clock stopped for good (a wait on an item
    ends when the item falls silent)."""
    happenings = _happenings(snap, task)
    if not happenings:
        return None
    last = max(happenings, key=lambda h: (h.at, h.event_id or ""))
    when = idle_reached_at(last.at, _waits(snap, settings, task), settings.stuck_after)
    return (when, last) if when is not None else None


def idle_reached_at(
    since: datetime, waits: list[tuple[datetime, datetime | None]], idle: float
) -> datetime | None:
    """The time at which `idle` has passed since `since`, not counting the periods of
    `waits` (start, end or None while it lasts), `idle` in seconds; None if a wait
    never ends."""
    clock, remaining = since, idle
    for start, end in sorted(waits, key=lambda w: w[0]):
        if end is not None and end <= clock:
            continue
        if start > clock:
            if (start - clock).total_seconds() >= remaining:
                break
            remaining -= (start - clock).total_seconds()
        if end is None:
            return None
        clock = max(clock, end)
    return after(clock, remaining)


def _happenings(snap: Snapshot, task: TaskView) -> list[Happening]:
    happenings = [Happening(task.delegated_at, task.delegated_event, "the delegation")]
    for run in owned_runs(snap, task):
        happenings += [
            Happening(run.requested_at, run.requested_event, f"{run_name(run)}'s request"),
            Happening(run.started_at, run.started_event, f"{run_name(run)}'s start"),
            Happening(run.last_activity_at, run.activity_event, f"{run_name(run)}'s activity"),
            Happening(run.finished_at, run.finished_event, f"{run_name(run)}'s end"),
        ]
    for item in owned_items(snap, task):
        happenings += [
            Happening(item.started_at, item.started_event, f"background item {item.id}'s start"),
            Happening(item.finished_at, item.finished_event, f"background item {item.id}'s end"),
        ]
    happenings += [
        Happening(sub.delegated_at, sub.delegated_event, f"the delegation of task {sub.id}")
        for sub in delegated_tasks(snap, task)
    ]
    return [h for h in happenings if h.at is not None]


def _waits(
    snap: Snapshot, settings: DetectionSettings, task: TaskView
) -> list[tuple[datetime, datetime | None]]:
    """Periods in which T waits on owned work, so its quiet is not idleness: an awaited
    background item until it finishes or falls silent (silent_background_item), a
    delegated task until it settles."""
    waits = [
        (item.started_at, waited_until(snap, settings, item))
        for item in owned_items(snap, task)
        if awaited(item) and item.started_at is not None
    ]
    waits += [
        (sub.delegated_at, settled_at(sub))
        for sub in delegated_tasks(snap, task)
        if sub.delegated_at is not None
    ]
    return waits


def settled_at(task: TaskView) -> datetime | None:
    """Since when T's reports have been terminal; None while its current one is not."""
    settled = None
    for report in sorted(task.reports, key=lambda r: (r.at, r.event_id), reverse=True):
        if not report.terminal:
            break
        settled = report.at
    return settled


# (b) wakes that did not start the child


def _unstarted_wakes(
    snap: Snapshot, settings: DetectionSettings, task: TaskView
) -> list[tuple[datetime, WakeView]]:
    """Wakes queued for T's child thread that started nothing, with when each counts as
    stuck; one queued while a child run went on is judged from that run's end."""
    thread = child_thread(snap, task)
    if thread is None:
        return []
    runs = snap.runs_by_thread.get(thread, [])
    # A run names its waking wake: only runs of this thread can have started its wakes.
    started = {run.trigger_ref for run in runs if run.trigger_kind == "wake"}
    due = []
    for wake in sorted(snap.wakes_by_target.get(thread, []), key=lambda w: w.id):
        if wake.queued_at is None or wake.delivered or wake.id in started:
            continue
        busy = [run for run in runs if _unfinished_at(run, wake.queued_at)]
        if any(not run.finished for run in busy):
            continue  # judged once that run ends; until then (a) watches the run
        since = max([wake.queued_at] + [run.finished_at for run in busy])
        due.append((after(since, settings.wake_start_timeout), wake))
    return due


def _unfinished_at(run: RunView, at: datetime) -> bool:
    begun = run.requested_at or run.started_at
    if begun is None or begun > at:
        return False
    return not run.finished or (run.finished_at is not None and run.finished_at > at)
