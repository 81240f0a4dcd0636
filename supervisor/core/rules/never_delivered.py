"""never_delivered: T's result is terminal, and no text of T has reached the parent
while nothing will bring it (no run of the parent thread is unfinished).

Judged only on tasks whose orchestrator says it hands results by wakes alone
(`delivery: "wake"` on the report): elsewhere a terminal report is itself the handing
(contract §4). T3 caps completion wakes per cohort, and a wait-mode call can die before
its result: such a result stays `pending` for good while the parent sits idle.

Reads `core.facts.reading`'s "delivered" meaning (§4: a task wake of T delivered to the
parent, or a delivery by hand of T made)."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.contract.times import after
from supervisor.core.facts import reading
from supervisor.core.facts.snapshot import DetectionSettings, Finding, Snapshot, TaskView

from .task_deadlines import coming, opened

KIND = "never_delivered"
# T3 reserves a follow-up delivery only while a cohort has settled fewer than two.
CAPPED_AT = 2


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    return opened(snap, settings, now, _due)


def due_times(snap: Snapshot, settings: DetectionSettings, now: datetime) -> dict:
    return coming(snap, settings, now, _due)


def reached(snap: Snapshot, task: TaskView) -> bool:
    """A task wake of T delivered to the parent (a read, a tool call's return, a wake
    run that started), or a delivery by hand: the reading's "delivered" meaning."""
    return reading.delivered_to_parent(snap, task)


def reads_parent_runs(snap: Snapshot, task: TaskView) -> bool:
    """Whether this rule reads T's parent thread's runs to judge T: its result is terminal
    and handed by wakes alone, and none was delivered. Of the rules, only this one reads
    the runs of a task's parent thread for it (detection/settled.py)."""
    report = task.current_report
    if report is None or not report.terminal or report.delivery != "wake":
        return False
    return task.parent_thread is not None and not reached(snap, task)


def _due(
    snap: Snapshot, settings: DetectionSettings, task: TaskView
) -> tuple[datetime, Finding] | None:
    if not reads_parent_runs(snap, task):
        return None
    report = task.current_report
    parent_runs = snap.runs_by_thread.get(task.parent_thread, [])
    if any(run.finished_at is None for run in parent_runs):
        return None  # a live or queued parent run may still take it
    quiet_since = max(
        [report.at, *(run.finished_at for run in parent_runs if run.finished_at is not None)]
    )
    finding = Finding(
        KIND,
        "task",
        task.id,
        {
            "events": [report.event_id],
            "text": (
                f"The task was reported {report.status}, and no text of it has reached the "
                f"parent thread {task.parent_thread}, which has no run under way: nothing "
                "will bring it."
            ),
            "result": report.summary,
            "idle_since": quiet_since.isoformat(),
            **_record(report),
        },
    )
    return after(quiet_since, settings.delivery_grace), finding


def _record(report) -> dict:
    """What the orchestrator's own delivery record said, when it keeps one."""
    if report.delivery_record is None:
        return {}
    said = {"delivery_record": report.delivery_record}
    if report.settled_deliveries is not None:
        said["settled_deliveries"] = report.settled_deliveries
    if report.delivery_record == "pending" and (report.settled_deliveries or 0) >= CAPPED_AT:
        said["why"] = (
            f"The orchestrator recorded the result pending after the delegating run had "
            f"settled {report.settled_deliveries} deliveries: it reserves no more for that "
            "run (T3 #12285)."
        )
    return said
