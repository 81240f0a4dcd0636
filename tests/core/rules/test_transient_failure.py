"""transient_failure: failed on a passing provider or transport fault (contract §5)."""

import pytest

from supervisor.core.rules import transient_failure as rule
from tests.support.snapshots import SETTINGS, TASK, at, report, snapshot, subjects, task

NOW = at(3600)


def open_on(status="failed", summary=None, error=None):
    views = task(reports=[report(status, 100, summary=summary, error=error)])
    return subjects(rule.findings(snapshot(views), SETTINGS, NOW))


@pytest.mark.parametrize("code", ["408", "429", "500", "502", "503", "504", "529"])
def test_passing_status_code_as_a_word(code):
    assert open_on(summary=f"API Error: {code} from upstream") == [TASK]


def test_status_code_inside_a_longer_number_is_not_a_word():
    assert open_on(summary="migration 15030 failed; id E503x") == []


def test_403_with_cloudflare_is_passing():
    # seed002 (a1): "API Error: 403 Attention Required! | Cloudflare".
    assert open_on(summary="API Error: 403 Attention Required! | Cloudflare") == [TASK]


def test_403_alone_is_a_real_refusal():
    assert open_on(summary="API Error: 403 Forbidden") == []


@pytest.mark.parametrize(
    "phrase",
    [
        "Overloaded",
        "Rate limit reached",
        "TypeError: fetch failed",
        "read econnreset",
        "connect ETIMEDOUT 1.2.3.4:443",
        "Socket hang up",
        "request TIMED OUT",
    ],
)
def test_passing_phrases_in_any_case(phrase):
    assert open_on(summary=phrase) == [TASK]


def test_the_error_is_read_as_well_as_the_summary():
    assert open_on(summary="Could not finish.", error="529 overloaded_error") == [TASK]


def test_403_and_cloudflare_count_together_across_the_summary_and_the_error():
    # Contract 1.1: the summary and the error are one text, joined by a space.
    assert open_on(summary="API Error: 403", error="Attention Required! | Cloudflare") == [TASK]
    assert open_on(summary="blocked by Cloudflare", error="HTTP 403") == [TASK]


def test_the_summary_and_the_error_do_not_run_into_one_word():
    # Joined by a space: "50" and "3" are two words, not a 503.
    assert open_on(summary="exit 50", error="3") == []


@pytest.mark.parametrize(
    "phrase", ["rate-limited", "Ratelimit exceeded", "rate_limit_error", "RATE LIMIT"]
)
def test_rate_limit_with_a_space_a_hyphen_an_underscore_or_nothing(phrase):
    assert open_on(summary=f"Provider said: {phrase}") == [TASK]


def test_a_real_failure_is_not_transient():
    # healthy-real-failure: "migration 0042 drops a column still read by billing".
    summary = "Dry-run failed: migration 0042 drops a column still read by billing."
    assert open_on(summary=summary, error="migration check failed") == []


def test_only_a_failed_report_counts():
    assert open_on(status="interrupted", summary="503 Service Unavailable") == []


def test_resolves_when_a_later_report_is_not_failed():
    views = task(
        reports=[
            report("failed", 100, summary="503 Service Unavailable"),
            report("completed", 200, summary="done"),
        ]
    )
    assert subjects(rule.findings(snapshot(views), SETTINGS, NOW)) == []


def test_evidence_names_the_report():
    [finding] = rule.findings(
        snapshot(task(reports=[report("failed", 100, summary="429 Too Many Requests")])),
        SETTINGS,
        NOW,
    )
    assert finding.evidence["events"] == ["report/failed@100"]
    assert finding.evidence["fault"] == "429"
