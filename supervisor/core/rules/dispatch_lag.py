"""dispatch_lag: a delegation reached the orchestrator well after the parent emitted it."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.facts.ownership import judged_tasks
from supervisor.core.facts.snapshot import DetectionSettings, Finding, Snapshot, TaskView

KIND = "dispatch_lag"


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    found = [_finding(settings, task) for task in judged_tasks(snap)]
    return [finding for finding in found if finding is not None]


def _finding(settings: DetectionSettings, task: TaskView) -> Finding | None:
    if task.requested_at is None or task.delegated_at is None:
        return None
    lag = (task.delegated_at - task.requested_at).total_seconds()
    if lag <= settings.dispatch_lag:
        return None
    return Finding(
        KIND,
        "task",
        task.id,
        {
            "events": [task.delegated_event] if task.delegated_event else [],
            "text": (
                f"The delegation was dispatched {lag:.1f} s after the parent emitted it "
                f"(batched wait calls run one at a time)."
            ),
            "lag_seconds": round(lag, 3),
        },
    )
