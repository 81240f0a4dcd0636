"""dispatch_lag: delegated well after the parent emitted the call (contract §5)."""

from supervisor.core.rules import dispatch_lag as rule
from tests.support.snapshots import SETTINGS, TASK, at, snapshot, subjects, task

NOW = at(3600)
LAG = SETTINGS.dispatch_lag


def open_on(*views):
    return subjects(rule.findings(snapshot(*views), SETTINGS, NOW))


def test_opens_when_dispatched_more_than_dispatch_lag_after_the_request():
    # seed003 (probe-b): emitted 23:58:56.879, delegated 23:59:04.941: 8.06 s > 5 s.
    assert open_on(task(requested=0, delegated=8.062)) == [TASK]


def test_not_open_at_exactly_dispatch_lag():
    assert open_on(task(requested=0, delegated=LAG)) == []


def test_opens_just_past_dispatch_lag():
    assert open_on(task(requested=0, delegated=LAG + 0.001)) == [TASK]


def test_not_open_for_a_prompt_dispatch():
    # seed003 (probe-a): 10 ms.
    assert open_on(task(requested=0, delegated=0.01)) == []


def test_not_open_without_requested_at():
    assert open_on(task(delegated=100)) == []


def test_evidence_names_the_delegation():
    [finding] = rule.findings(snapshot(task(requested=0, delegated=8)), SETTINGS, NOW)
    assert finding.evidence["events"] == [f"{TASK}/delegated"]
    assert finding.evidence["lag_seconds"] == 8
