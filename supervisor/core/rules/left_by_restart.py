"""left_by_restart: the orchestrator's restart cut the child's latest run, and the task
still says it is under way: nothing will resume it (T3 #7314: a build whose recovery
leaves such a task `running` for good).

Raised on T whose current report is not terminal (or that has none) when the latest
run of T's child thread finished with `cause: "restart"` (a compatible extension of
`run.finished`). Any later run of the child (a continue, a resumed turn) or a terminal
report resolves it.

Extension (issue 28): a build whose recovery (or a stop) cancels such a task instead
reports it `cancelled` with `cause: "restart"` (T3 0.0.33): terminal, yet nobody
cancelled it and the parent will never hear of it. That report keeps the flag raised
until the child runs again or a delivery by hand of T tells the parent."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.facts import reading
from supervisor.core.facts.ownership import child_thread, judged_tasks, run_name
from supervisor.core.facts.snapshot import DetectionSettings, Finding, Snapshot

KIND = "left_by_restart"


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    found = []
    for task in judged_tasks(snap):
        report = task.current_report
        cut = report is not None and report.status == "cancelled" and report.cause == "restart"
        if report is not None and report.terminal and not cut:
            continue
        # The reading's "delivered" meaning: a delivery by hand of T, one without text too.
        if cut and reading.deliveries_by_hand(snap, task, any_text=True):
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
                        f"The orchestrator's restart cut the child's {run_name(latest)}, and the "
                        "orchestrator cancelled the task itself: the parent will not hear of it."
                        if cut
                        else f"The orchestrator's restart cut the child's {run_name(latest)}, and "
                        f"the task is still reported {report.status if report else 'unreported'}"
                        ": nothing will resume it."
                    ),
                    "cancelled_by_restart": cut,
                    "run": latest.id,
                },
            )
        )
    return found
