"""late_wake: a task wake to the parent was not delivered in time (contract §5)."""

from supervisor.core.rules import late_wake as rule
from tests.support.snapshots import PARENT, SETTINGS, TASK, at, snapshot, task, wake

TIMEOUT = SETTINGS.wake_timeout
QUEUED = 100


def open_at(seconds, *views):
    findings = rule.findings(snapshot(*views), SETTINGS, at(seconds))
    return [(f.subject_type, f.subject_id) for f in findings]


def test_not_open_just_before_wake_timeout():
    assert open_at(QUEUED + TIMEOUT - 1, task(), wake("w", queued=QUEUED)) == []


def test_opens_exactly_at_wake_timeout():
    assert open_at(QUEUED + TIMEOUT, task(), wake("w", queued=QUEUED)) == [("task", TASK)]


def test_next_change_is_when_wake_timeout_ends():
    snap = snapshot(task(), wake("w", queued=QUEUED))
    assert min(rule.due_times(snap, SETTINGS, at(QUEUED)).values()) == at(QUEUED + TIMEOUT)


def test_resolves_when_the_wake_is_delivered():
    # seed002: queued 10:00:43.2, late from 10:10:43.2, delivered 10:51:08: resolved.
    views = task(), wake("w", queued=QUEUED, delivered=QUEUED + 2500)
    assert open_at(QUEUED + 3000, *views) == []


def test_delivered_in_time_never_opens():
    # healthy-*: task wakes delivered within 0.1 s.
    assert open_at(QUEUED + TIMEOUT, task(), wake("w", queued=QUEUED, delivered=QUEUED)) == []


def test_wake_naming_an_unknown_task_sits_on_the_task_of_its_source_thread():
    # seed002: the wake names "other-id" but came from a1's child thread: it sits on a1.
    views = task(), wake("w", source=("task", "task:other-id"), queued=QUEUED)
    assert open_at(QUEUED + TIMEOUT, *views) == [("task", TASK)]


def test_wake_naming_an_unknown_task_from_an_unknown_thread_sits_on_the_target_thread():
    views = (wake("w", source=("task", "task:other-id"), source_thread=None, queued=QUEUED),)
    assert open_at(QUEUED + TIMEOUT, *views) == [("thread", PARENT)]


def test_only_task_wakes_count():
    views = task(), wake("w", source=("background", "bg"), queued=QUEUED)
    assert open_at(QUEUED + TIMEOUT, *views) == []


def test_evidence_names_the_queued_wake():
    [finding] = rule.findings(snapshot(task(), wake("w", queued=QUEUED)), SETTINGS, at(3600))
    assert finding.evidence["events"] == ["w/queued"]
