"""left_by_restart: the orchestrator's restart cut the child's latest run, and the task
still says it is under way: nothing will resume it (T3 #7314: a build whose recovery
leaves such a task `running` for good).

Raised on T whose current report is not terminal (or that has none) when the latest
run of T's child thread finished with `cause: "restart"` (a compatible extension of
`run.finished`). Any later run of the child (a continue, a resumed turn) or a terminal
report resolves it."""

from __future__ import annotations

from datetime import datetime

from ..ownership import child_thread, judged_tasks
from ..snapshot import DetectionSettings, Finding, Snapshot

KIND = "left_by_restart"


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    found = []
    for task in judged_tasks(snap):
        report = task.current_report
        if report is not None and report.terminal:
            continue
        runs = snap.runs_by_thread.get(child_thread(snap, task) or "", [])
        known = [run for run in runs if run.ordinal is not None]  # sorted by ordinal
        if not known:
            continue
        latest = known[-1]
        if latest.finish_cause != "restart" or latest.finished_at is None:
            continue
        found.append(
            Finding(
                KIND,
                "task",
                task.id,
                {
                    "events": [e for e in (latest.finished_event,) if e is not None],
                    "text": (
                        f"The orchestrator's restart cut the child's run {latest.id}, and the "
                        f"task is still reported {report.status if report else 'unreported'}: "
                        "nothing will resume it."
                    ),
                    "run": latest.id,
                },
            )
        )
    return found
