"""failed_while_running: the task was reported failed while its child went on working."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from supervisor.core.facts.ownership import (
    child_thread,
    judged_tasks,
    owned_runs,
    result_run,
    run_name,
)
from supervisor.core.facts.snapshot import DetectionSettings, Finding, RunView, Snapshot, TaskView

KIND = "failed_while_running"

GAVE_UP = frozenset({"failed", "interrupted"})


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    found = [_finding(snap, task) for task in judged_tasks(snap)]
    return [finding for finding in found if finding is not None]


def _finding(snap: Snapshot, task: TaskView) -> Finding | None:
    report = task.current_report
    if report is None or report.status not in GAVE_UP:
        return None
    base = baseline(snap, task)
    going_on = [
        run
        for run in snap.runs_by_thread.get(child_thread(snap, task) or "", [])
        if run.ordinal is not None
        and run.ordinal > base.ordinal
        and (not run.finished or run.status == "completed")
    ]
    if not going_on:
        return None
    described = "; ".join(_described(run) for run in going_on)
    events = [report.event_id] + [run.requested_event for run in going_on]
    return Finding(
        KIND,
        "task",
        task.id,
        {
            "events": [e for e in events if e is not None],
            "text": (
                f"The task was reported {report.status} {base.words}, but its child went "
                f"on: {described}."
            ),
            "baseline_run": base.run,
            "runs": [run.id for run in going_on],
        },
    )


@dataclass(frozen=True)
class Baseline:
    """What the child's later runs are compared with: a run's ordinal, or 0 before any."""

    ordinal: int
    run: str | None  # None: T owns no run, so every run of the child thread is later
    name: str = ""  # the run as the page names it ("run 2")

    @property
    def words(self) -> str:
        return f"after {self.name}" if self.run else "before any run of its own"


def baseline(snap: Snapshot, task: TaskView) -> Baseline:
    """The result run when its ordinal is known, else T's highest owned run, else 0:
    while T owns no run, any run of the child thread counts (contract 1.1)."""
    rr = result_run(snap, task)
    if rr is not None and rr.ordinal is not None:
        return Baseline(rr.ordinal, rr.id, run_name(rr))
    owned = owned_runs(snap, task)
    if owned:  # requested runs only: each has its ordinal
        return Baseline(owned[-1].ordinal, owned[-1].id, run_name(owned[-1]))
    return Baseline(0, None)


def _described(run: RunView) -> str:
    if run.finished:
        return f"{run_name(run)} finished completed with {run.summary!r}"
    return f"{run_name(run)} is not finished"
