"""completed_on_failure: a success that hides a failure. The task is reported `completed`
while the run its result came from failed, was interrupted or was cancelled, or the text
handed as the result is that run's error, or T3's own fallback for a run that did not
complete (hermes #82599, Kilo PR #10485, t3code PR #3549 "interrupted shown as
completed"). The parent holds a success that is not one.

Raised on T whose current report is `completed` when, with R the report's result run
(`ownership.result_run`: the run it names, else the highest owned finished run with its
text), else the owned finished run with the highest ordinal:
- R finished `failed`, `interrupted` or `cancelled`; or
- the report's summary equals R's error (texts compared as the contract compares them:
  trimmed, white space collapsed); or
- the summary is T3's fallback "Child task ended with status X." with X not `completed`.

Not raised while an owned run is unfinished: the child is working on (a restart's
continuation, a continue), continuing it is not the answer, and premature_completion
speaks of a task called done while owned work runs.

Resolved when an owned run after R (a higher ordinal; any owned run when there is no R)
finished `completed` with a result, and that result reached the parent as the operator
sees it (`core.facts.reading`: a wake, a terminal report, a delivery by hand). A new report
whose result run completed answers it as well: the current report no longer says so.
"""

from __future__ import annotations

import re
from datetime import datetime

from supervisor.core.facts import reading
from supervisor.core.facts.ownership import (
    has_result,
    judged_tasks,
    normalized,
    owned_runs,
    result_run,
    run_name,
    unfinished_owned_runs,
)
from supervisor.core.facts.snapshot import DetectionSettings, Finding, RunView, Snapshot, TaskView

KIND = "completed_on_failure"

NOT_COMPLETED = ("failed", "interrupted", "cancelled")
# T3's text for a child that ended without a text result (t3code-facts §"results").
FALLBACK = re.compile(r"\AChild task ended with status (?P<status>\w+)\.?\Z", re.IGNORECASE)


def judged_run(snap: Snapshot, task: TaskView) -> RunView | None:
    """The run a report's result is judged by: its result run, else the owned finished
    run with the highest ordinal (None when neither is known yet)."""
    named = result_run(snap, task)
    if named is not None:
        return named
    finished = [run for run in owned_runs(snap, task) if run.finished]
    return finished[-1] if finished else None


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    found = [_finding(snap, task) for task in judged_tasks(snap)]
    return [finding for finding in found if finding is not None]


def _finding(snap: Snapshot, task: TaskView) -> Finding | None:
    report = task.current_report
    if report is None or report.status != "completed":
        return None
    run = judged_run(snap, task)
    why = _hidden_failure(report.summary, run)
    if why is None or unfinished_owned_runs(snap, task) or _answered(snap, task, run):
        return None
    events = [report.event_id]
    if run is not None and run.finished_event is not None:
        events.append(run.finished_event)
    return Finding(
        KIND,
        "task",
        task.id,
        {
            "events": events,
            "text": f"The task was reported completed, but {why}: the parent holds a success "
            "that is not one.",
            "run": run.id if run is not None else None,
            "run_status": run.status if run is not None else None,
        },
    )


def _hidden_failure(summary: str | None, run: RunView | None) -> str | None:
    """Why a completed report hides a failure, in words, or None."""
    if run is not None and run.finished and run.status in NOT_COMPLETED:
        return f"the child's {run_name(run)}, its result run, finished {run.status}"
    text = normalized(summary)
    if run is not None and text and text == normalized(run.error):
        return f"the text handed as its result is the error of the child's {run_name(run)}"
    fallback = FALLBACK.match(text or "")
    if fallback and fallback["status"].lower() != "completed":
        return f"its result reads {text!r}: the child ended {fallback['status'].lower()}"
    return None


def _answered(snap: Snapshot, task: TaskView, run: RunView | None) -> bool:
    """A later owned run completed and its result reached the parent."""
    after = run.ordinal if run is not None and run.ordinal is not None else 0
    return any(
        later.ordinal is not None
        and later.ordinal > after
        and later.status == "completed"
        and has_result(later)
        and reading.reached_as_operator_sees_it(snap, task, later)
        for later in owned_runs(snap, task)
    )
