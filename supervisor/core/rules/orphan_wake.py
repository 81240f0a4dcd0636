"""orphan_wake: a task wake names a task that never became known."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.contract.times import after
from supervisor.core.facts.ownership import child_thread_task
from supervisor.core.facts.snapshot import DetectionSettings, Finding, Snapshot, WakeView

from .wake_deadlines import earliest_by_subject, passed_by_subject

KIND = "orphan_wake"


def names_unknown_task(snap: Snapshot, wake: WakeView) -> bool:
    if wake.source_kind != "task":
        return False
    task = snap.tasks.get(wake.source_task or "")
    if task is None:
        return wake.source_task not in snap.known_beside
    return not task.known


def wake_subject(snap: Snapshot, wake: WakeView) -> tuple[str, str] | None:
    """Where a wake naming an unknown task sits now: on the known task whose child thread
    sent it, else on the thread it was queued for."""
    task = child_thread_task(snap, wake.source_thread)
    if task is not None:
        return "task", task.id
    if wake.thread is not None:
        return "thread", wake.thread
    return None


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    passed = passed_by_subject(_due(snap, settings), now)
    return [_finding(subject, wakes) for subject, wakes in passed.items()]


def due_times(snap: Snapshot, settings: DetectionSettings, now: datetime) -> dict:
    """(subject type, id) -> the earliest later time a wake there turns this kind on."""
    return earliest_by_subject(_due(snap, settings), now)


def _due(
    snap: Snapshot, settings: DetectionSettings
) -> list[tuple[datetime, tuple[str, str], WakeView]]:
    """Each wake naming an unknown task, with when it counts as orphaned and its subject."""
    due = []
    for wake in sorted(snap.wakes.values(), key=lambda w: w.id):
        if wake.queued_at is None or not names_unknown_task(snap, wake):
            continue
        subject = wake_subject(snap, wake)
        if subject is not None:
            due.append((after(wake.queued_at, settings.orphan_grace), subject, wake))
    return due


def _finding(subject: tuple[str, str], wakes: list[WakeView]) -> Finding:
    wakes = sorted(wakes, key=lambda w: (w.queued_at, w.id))
    named = sorted({w.source_task for w in wakes if w.source_task})
    return Finding(
        KIND,
        subject[0],
        subject[1],
        {
            "events": [w.queued_event for w in wakes if w.queued_event],
            "text": (
                f"Wake {', '.join(w.id for w in wakes)} names task {', '.join(named)}, which "
                f"was never delegated here."
            ),
            "wakes": [w.id for w in wakes],
            "named_tasks": named,
        },
    )
