"""undelivered_result: a later owned run's result never reached the parent.

Reads `core.facts.reading` by the contract's words (§4, §5): result run, latest result,
reached."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.contract.times import after
from supervisor.core.facts import reading
from supervisor.core.facts.ownership import run_name
from supervisor.core.facts.snapshot import DetectionSettings, Finding, Snapshot, TaskView

from .task_deadlines import coming, opened

KIND = "undelivered_result"


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    return opened(snap, settings, now, _due)


def due_times(snap: Snapshot, settings: DetectionSettings, now: datetime) -> dict:
    return coming(snap, settings, now, _due)


def _due(
    snap: Snapshot, settings: DetectionSettings, task: TaskView
) -> tuple[datetime, Finding] | None:
    """When the kind opens on T if nothing else arrives, with the finding it would be."""
    report = task.current_report
    if report is None or not report.terminal:
        return None
    rr = reading.result_run_by_contract(snap, task)
    latest = reading.latest_result_by_contract(snap, task)
    if rr is None or rr.ordinal is None or latest is None or latest.summary is None:
        return None
    if latest.ordinal <= rr.ordinal or latest.finished_at is None:
        return None
    if reading.reached_by_contract(snap, task, latest.summary):
        return None
    events = [report.event_id, latest.finished_event]
    finding = Finding(
        KIND,
        "task",
        task.id,
        {
            "events": [e for e in events if e is not None],
            "text": (
                f"The task was reported {report.status} with {run_name(rr)}'s text, but the later "
                f"{run_name(latest)} finished with {latest.summary!r}, which has not reached the "
                f"parent."
            ),
            "result_run": rr.id,
            "latest_run": latest.id,
            "latest_result": latest.summary,
        },
    )
    return after(latest.finished_at, settings.delivery_grace), finding
