"""account_limit: a usage or spend limit of the account ended the child."""

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from supervisor.core.rules import account_limit as rule
from supervisor.core.rules import transient_failure
from tests.support.snapshots import SETTINGS, T0, TASK, at, report, run, snapshot, subjects, task

NOW = at(3600)


def findings_on(status="failed", summary=None, error=None, failure_class=None, *views):
    reported = report(status, 100, summary=summary, error=error, failure_class=failure_class)
    return rule.findings(snapshot(task(reports=[reported]), *views), SETTINGS, NOW)


def open_on(**kw):
    return subjects(findings_on(**kw))


@pytest.mark.parametrize(
    "text",
    [
        "Claude AI usage limit reached|1765040400",
        "You've hit your usage limit. Upgrade to Pro or try again in 4 days.",
        "5-hour limit reached ∙ resets 5pm",
        "You've hit your limit · resets 3am (Europe/London)",
        "Error code: 429 - You exceeded your current quota, please check your plan and billing "
        "details. (insufficient_quota)",
        "Your credit balance is too low to access the Anthropic API.",
        "You are out of credits.",
        "Monthly spend limit reached for this workspace.",
        "402 Payment Required",
        "Quota exceeded for this account.",
        "Weekly limit reached",
    ],
)
def test_texts_that_read_as_an_account_limit(text):
    assert open_on(summary=text) == [TASK]


@pytest.mark.parametrize(
    "text",
    [
        "Rate limit reached",
        "Rate limit reached for gpt-4o, resets in 20s",
        "rate_limit_error: Number of request tokens has exceeded your per-minute quota",
        "Dry-run failed: migration 0042 drops a column still read by billing.",
        "disk full",
        "API Error: 529 overloaded",
    ],
)
def test_passing_faults_and_real_failures_are_not_account_limits(text):
    assert open_on(summary=text) == []


def test_the_error_is_read_with_the_summary():
    assert open_on(summary="The child stopped.", error="usage_limit_exceeded") == [TASK]


def test_only_a_failed_report_counts():
    assert open_on(status="interrupted", summary="Usage limit reached") == []
    assert open_on(status="completed", summary="Usage limit reached") == []


def test_the_failure_class_on_the_report():
    found = findings_on(summary="The provider refused.", failure_class="usage_limit")
    assert subjects(found) == [TASK]
    assert found[0].evidence["failure_class"] == "usage_limit"
    assert "classes it usage_limit" in found[0].evidence["text"]


def test_the_failure_class_on_the_run_it_is_judged_by():
    limited = replace(
        run("r1", 1, finished=90, status="failed", summary=""), failure_class="usage_limit"
    )
    found = findings_on("failed", "Failed.", None, None, limited)
    assert subjects(found) == [TASK]
    assert found[0].evidence["run"] == "r1"


def test_another_failure_class_is_not_one():
    assert open_on(summary="The provider refused.", failure_class="provider_error") == []


def test_a_later_report_resolves_it():
    reports = [report("failed", 100, summary="Usage limit reached"), report("running", 200)]
    assert subjects(rule.findings(snapshot(task(reports=reports)), SETTINGS, NOW)) == []


# The reset: the report is at T0 + 100 s = 2026-11-05 22:41:40 UTC.
REPORTED = at(100)


@pytest.mark.parametrize(
    ("text", "resets_at"),
    [
        ("usage limit reached, resets at 11pm", "2026-11-05T23:00:00Z"),
        ("usage limit reached, resets 5pm", "2026-11-06T17:00:00Z"),  # passed today: tomorrow
        ("usage limit, resets 17:00 UTC", "2026-11-06T17:00:00Z"),
        ("hit your limit · resets 3am (Europe/Paris)", "2026-11-06T02:00:00Z"),
        ("quota exceeded, try again at 2026-12-06T17:00Z", "2026-12-06T17:00:00Z"),
        ("quota exceeded, try again at 2026-12-06 17:00", "2026-12-06T17:00:00Z"),
        ("usage limit reached; resets in 3 hours", "2026-11-06T01:41:40Z"),
        ("usage limit; try again in 1 day 2h 30 minutes", "2026-11-07T01:11:40Z"),
        ("Claude AI usage limit reached|1765040400", "2025-12-06T17:00:00Z"),
    ],
)
def test_the_reset_time_the_text_gives(text, resets_at):
    (found,) = findings_on(summary=text)
    assert found.evidence["resets_at"] == resets_at
    assert found.evidence["reset_words"]
    assert f"resets at {resets_at[:10]} {resets_at[11:16]} UTC" in found.evidence["text"]


def test_a_reset_between_two_seconds_is_named_by_the_later_one():
    """The evidence names the reset to the second, rounded up: a snooze until it ends
    once the limit has reset, never a fraction of a second before (a report at
    22:41:40.4 resetting in 3 hours resets at 01:41:40.4, so 01:41:41)."""
    reported = report("failed", 100.4, summary="usage limit reached; resets in 3 hours")
    (found,) = rule.findings(snapshot(task(reports=[reported])), SETTINGS, NOW)
    assert found.evidence["resets_at"] == "2026-11-06T01:41:41Z"


def test_no_reset_time_when_the_text_gives_none():
    (found,) = findings_on(summary="Your credit balance is too low.")
    assert found.evidence["resets_at"] is None
    assert "does not say when the limit resets" in found.evidence["text"]


@pytest.mark.parametrize("text", ["usage limit, resets 5", "usage limit, resets 25:00"])
def test_a_number_that_is_no_time_of_day_is_no_reset(text):
    (found,) = findings_on(summary=text)
    assert found.evidence["resets_at"] is None


def test_reset_time_is_a_function_of_the_text_and_the_report_time():
    at_noon = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    assert rule.reset_time("resets at 5pm", at_noon)[0] == datetime(2026, 12, 6, 17, tzinfo=UTC)
    assert rule.reset_time("nothing here", at_noon) is None
    assert rule.reset_time("resets in 45 minutes", T0)[0] == at(45 * 60)


# Told apart from a passing fault: transient_failure does not open on an account limit.


def transient_on(**kw):
    reported = report("failed", 100, **kw)
    return subjects(transient_failure.findings(snapshot(task(reports=[reported])), SETTINGS, NOW))


def test_an_insufficient_quota_429_is_not_a_passing_fault():
    text = "429 You exceeded your current quota (insufficient_quota)"
    assert transient_on(summary=text) == []
    assert open_on(summary=text) == [TASK]


def test_a_usage_limit_class_shuts_transient_failure_too():
    assert transient_on(summary="API Error: 429", failure_class="usage_limit") == []
    assert transient_on(summary="API Error: 429") == [TASK]


def test_a_rate_limit_stays_a_passing_fault():
    assert transient_on(summary="Rate limit reached") == [TASK]
    assert open_on(summary="Rate limit reached") == []
