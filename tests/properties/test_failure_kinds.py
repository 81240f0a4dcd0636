"""Properties of the failure kinds (account_limit, transient_failure,
completed_on_failure) over generated histories: an account limit and a
passing fault never open together (their advice is contrary), a reset is never before
the failure it ends, and a success hiding a failure opens exactly when the brief says."""

import re
from dataclasses import replace
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from supervisor.core.facts.ownership import normalized
from supervisor.core.rules import account_limit, completed_on_failure, transient_failure
from tests.support.snapshots import SETTINGS, TASK, at, report, run, snapshot, subjects, task, wake

NOW = at(86400)
# Pieces of failure texts: passing faults, account limits, resets and filler.
PIECES = [
    "API Error: 429",
    "503 Service Unavailable",
    "Rate limit reached",
    "rate_limit_error",
    "per-minute quota",
    "Overloaded",
    "usage limit reached",
    "insufficient_quota",
    "You exceeded your current quota",
    "credit balance is too low",
    "disk quota exceeded",
    "billing",
    "resets 5pm",
    "resets in 3 hours",
    "try again at 2026-12-06T17:00Z",
    "resets 3am (Europe/Paris)",
    "try again in 20s",
    "Claude AI usage limit reached|1765040400",
    "the check failed",
    "·",
]
texts = st.lists(st.sampled_from(PIECES), max_size=4).map(" ".join) | st.text(max_size=40)
classes = st.sampled_from([None, "usage_limit", "provider_error", "transport_error", "unknown"])


@given(summary=texts, error=texts, report_class=classes, run_class=classes)
def test_an_account_limit_and_a_passing_fault_never_open_together(
    summary, error, report_class, run_class
):
    views = (
        task(
            reports=[
                report(
                    "failed",
                    100,
                    summary=summary,
                    error=error,
                    result_run="r1",
                    failure_class=report_class,
                )
            ]
        ),
        replace(
            run("r1", 1, finished=90, status="failed", summary=summary), failure_class=run_class
        ),
    )
    snap = snapshot(*views)
    limit = subjects(account_limit.findings(snap, SETTINGS, NOW))
    passing = subjects(transient_failure.findings(snap, SETTINGS, NOW))
    assert not (limit and passing)
    # Where either class says usage_limit, it is an account limit.
    if "usage_limit" in (report_class, run_class):
        assert limit == [TASK]
    # Where no class says so, the text alone decides, and a passing fault that is no
    # account limit still reads as transient_failure had read it.
    text = " ".join(p for p in (summary, error) if p)
    if "usage_limit" not in (report_class, run_class):
        assert bool(limit) == bool(account_limit.account_limit_words(text))
        if not limit:
            assert bool(passing) == bool(transient_failure.passing_fault(text))


@given(text=texts, offset=st.integers(0, 10 * 86400))
def test_a_reset_read_from_a_span_or_a_time_of_day_is_not_before_the_failure(text, offset):
    failed_at = at(offset)
    found = account_limit.reset_time(text, failed_at)
    if found is None:
        return
    when, words = found
    assert words and words in text
    # A time stamp or Claude Code's Unix seconds say the moment itself; a span or a time
    # of day is counted from the failure, so it comes at or after it (within the span).
    if "|" not in words and not re.search(r"\d{4}-\d{2}-\d{2}", words):
        assert failed_at <= when <= failed_at + timedelta(days=40)


STATUSES = st.sampled_from(["completed", "failed", "interrupted", "cancelled", None])


@given(
    first=STATUSES,
    second=STATUSES,
    names_run=st.booleans(),
    summary_is_error=st.booleans(),
    reached=st.booleans(),
)
def test_a_success_hiding_a_failure_opens_exactly_as_the_brief_says(
    first, second, names_run, summary_is_error, reached
):
    """Run 1 (maybe run 2, a restart of it) finished with the given statuses (None:
    unfinished); the task is reported completed on run 1, naming it or not; run 2's
    text reached the parent or not."""
    error = "API Error: 400 prompt is too long"
    summary = error if summary_is_error else "Partial work."
    runs = [
        replace(
            run(
                "r1",
                1,
                finished=50 if first else None,
                status=first or "completed",
                summary="Partial work.",
            ),
            error=error if first else None,
        )
    ]
    if second is not None or first is not None:
        runs.append(
            run(
                "r2",
                2,
                trigger=("restart", "r1"),
                requested=60,
                finished=90 if second else None,
                status=second or "completed",
                summary="All done.",
            )
        )
    views = [
        task(
            reports=[
                report("completed", 55, summary=summary, result_run="r1" if names_run else None)
            ]
        ),
        *runs,
    ]
    if reached:
        views.append(wake("w2", summary="All done.", queued=95, delivered=96))
    snap = snapshot(*views)
    opened = subjects(completed_on_failure.findings(snap, SETTINGS, NOW))
    unfinished = any(not r.finished for r in runs)
    judged = completed_on_failure.judged_run(snap, snap.tasks[TASK])
    hides = judged is not None and (
        (judged.finished and judged.status != "completed")
        or (normalized(summary) == normalized(judged.error))
    )
    later_reached = (
        len(runs) == 2
        and runs[1].finished
        and second == "completed"
        and reached
        and judged is not None
        and judged.id == "r1"
    )
    assert bool(opened) == (hides and not unfinished and not later_reached)
