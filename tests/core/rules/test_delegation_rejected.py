"""delegation_rejected: a thread's delegation was refused (contract §5)."""

from supervisor.core.rules import delegation_rejected as rule
from tests.support.snapshots import PARENT, SETTINGS, at, rejection, snapshot, subjects

NOW = at(3600)


def open_on(*views):
    return subjects(rule.findings(snapshot(*views), SETTINGS, NOW))


def test_opens_on_parent_not_active():
    # seed004: a background subagent's delegate_task got parent_not_active.
    assert open_on(rejection("e1", tool="other_tool")) == [PARENT]


def test_opens_on_any_rejected_delegate_task():
    assert open_on(rejection("e1", code="quota_exceeded")) == [PARENT]


def test_not_open_for_another_tool_and_code():
    assert open_on(rejection("e1", tool="write_file", code="denied")) == []


def test_one_finding_per_thread_with_every_rejection():
    views = rejection("e2", when=20), rejection("e1", when=10), rejection("e3", thread="thread:b")
    findings = rule.findings(snapshot(*views), SETTINGS, NOW)
    assert [(f.subject_type, f.subject_id) for f in findings] == [
        ("thread", "thread:b"),
        ("thread", PARENT),
    ]
    assert findings[1].evidence["events"] == ["e1", "e2"]
