"""premature_completion: the task was reported done while its child still owes work.

Raised and resolved on `core.facts.reading` by the contract's words (§4, §5: result
run, latest result, reached); its evidence's "has not reached the parent" sentence reads
it as the operator sees it, as the task page does."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from supervisor.core.facts import reading
from supervisor.core.facts.ownership import (
    judged_tasks,
    open_delegated_tasks,
    owned_runs,
    run_name,
    unfinished_owned_items,
    unfinished_owned_runs,
)
from supervisor.core.facts.snapshot import (
    DetectionSettings,
    Finding,
    ReportView,
    Snapshot,
    TaskView,
)

KIND = "premature_completion"

NOT_A_RESULT = frozenset({"failed", "cancelled", "interrupted"})


@dataclass(frozen=True)
class Owed:
    """A piece of work T owes: how it is owed, what, and the event that makes it T's."""

    how: str
    what: str
    event_id: str | None


def says_completed(report: ReportView) -> bool:
    """`completed`, or a result available under a status that is not a failure."""
    return report.status == "completed" or (
        report.work_state == "result_available" and report.status not in NOT_A_RESULT
    )


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    found = [_finding(snap, task) for task in judged_tasks(snap)]
    return [finding for finding in found if finding is not None]


def _finding(snap: Snapshot, task: TaskView) -> Finding | None:
    report = task.current_report
    if report is None or not says_completed(report):
        return None
    pending = _pending(snap, task)
    owed = pending + _runs_after_result(snap, task, pending)
    if report.pending_child_runs:
        owed.append(Owed("the report's own hint", "pending child runs", report.event_id))
    if not owed:
        return None
    latest = reading.latest_result_by_contract(snap, task)
    undelivered = latest is not None and latest.summary is not None
    undelivered = undelivered and not reading.reached_by_contract(snap, task, latest.summary)
    if not pending and not undelivered:
        return None
    events = [report.event_id] + [o.event_id for o in owed]
    text = f"Reported {report.status} while it still owes work: {_described(owed)}."
    # The evidence's words read the reading as the operator sees it: a terminal report
    # that handed the result counts there, as on the task page.
    reached = latest is not None and reading.reached_as_operator_sees_it(snap, task, latest)
    if undelivered and not reached:
        events.append(latest.finished_event)
        text += f" Its latest result, from {run_name(latest)}, has not reached the parent."
    rr = reading.result_run_by_contract(snap, task)
    return Finding(
        KIND,
        "task",
        task.id,
        {
            "events": list(dict.fromkeys(e for e in events if e is not None)),
            "text": text,
            "owed": [f"{o.how}: {o.what}" for o in owed],
            "result_run": rr.id if rr else None,
            "latest_run": latest.id if latest else None,
            "latest_result": latest.summary if latest else None,
            "latest_reached_parent": reached if latest else None,
        },
    )


def _pending(snap: Snapshot, task: TaskView) -> list[Owed]:
    """Owed work still going on."""
    pending = [
        Owed("unfinished runs", run_name(run), run.requested_event)
        for run in unfinished_owned_runs(snap, task)
    ]
    pending += [
        Owed("unfinished background items", item.id, item.started_event)
        for item in unfinished_owned_items(snap, task)
    ]
    pending += [
        Owed("delegated tasks not ended", sub.id, sub.delegated_event)
        for sub in open_delegated_tasks(snap, task)
    ]
    return pending


def _runs_after_result(snap: Snapshot, task: TaskView, pending: list[Owed]) -> list[Owed]:
    """Owned runs later than the run the reported text came from (not already pending)."""
    rr = reading.result_run_by_contract(snap, task)
    if rr is None or rr.ordinal is None:
        return []
    named = {o.what for o in pending}
    return [
        Owed(f"runs later than {run_name(rr)}, the result run", run_name(run), run.requested_event)
        for run in owned_runs(snap, task)
        if run.ordinal > rr.ordinal and run_name(run) not in named
    ]


def _described(owed: list[Owed]) -> str:
    grouped: dict[str, list[str]] = {}
    for o in owed:
        grouped.setdefault(o.how, []).append(o.what)
    return "; ".join(f"{how} ({', '.join(whats)})" for how, whats in grouped.items())
