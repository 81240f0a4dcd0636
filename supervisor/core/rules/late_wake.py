"""late_wake: a task wake to the parent was not delivered in time."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.contract.times import after
from supervisor.core.facts.snapshot import DetectionSettings, Finding, Snapshot, WakeView

from .orphan_wake import names_unknown_task, wake_subject
from .wake_deadlines import earliest_by_subject, passed_by_subject

KIND = "late_wake"


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    passed = passed_by_subject(_due(snap, settings), now)
    return [_finding(subject, wakes) for subject, wakes in passed.items()]


def due_times(snap: Snapshot, settings: DetectionSettings, now: datetime) -> dict:
    """(subject type, id) -> the earliest later time a wake there turns this kind on."""
    return earliest_by_subject(_due(snap, settings), now)


def _due(
    snap: Snapshot, settings: DetectionSettings
) -> list[tuple[datetime, tuple[str, str], WakeView]]:
    """Each undelivered task wake, with when it becomes late and the subject it sits on."""
    due = []
    for wake in sorted(snap.wakes.values(), key=lambda w: w.id):
        if wake.source_kind != "task" or wake.queued_at is None or wake.delivered:
            continue
        if names_unknown_task(snap, wake):
            subject = wake_subject(snap, wake)
        else:
            subject = "task", wake.source_task
        if subject is not None:
            due.append((after(wake.queued_at, settings.wake_timeout), subject, wake))
    return due


def _finding(subject: tuple[str, str], wakes: list[WakeView]) -> Finding:
    wakes = sorted(wakes, key=lambda w: (w.queued_at, w.id))
    return Finding(
        KIND,
        subject[0],
        subject[1],
        {
            "events": [w.queued_event for w in wakes if w.queued_event],
            "text": (
                f"Wake {', '.join(w.id for w in wakes)} to the parent was queued at "
                f"{wakes[0].queued_at.isoformat()} and has not been delivered."
            ),
            "wakes": [w.id for w in wakes],
        },
    )
