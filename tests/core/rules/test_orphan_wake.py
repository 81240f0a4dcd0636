"""orphan_wake: a task wake names a task that is not known (contract §5)."""

from supervisor.core.rules import orphan_wake as rule
from tests.support.snapshots import (
    CHILD,
    PARENT,
    SETTINGS,
    TASK,
    at,
    snapshot,
    task,
    unknown_task,
    wake,
)

GRACE = SETTINGS.orphan_grace


def orphan(**fields):
    fields = {"source": ("task", "task:other-id"), "summary": "done", "queued": 100, **fields}
    return wake("w1", **fields)


def open_at(seconds, *views):
    findings = rule.findings(snapshot(*views), SETTINGS, at(seconds))
    return [(f.subject_type, f.subject_id) for f in findings]


def test_not_open_just_before_orphan_grace():
    assert open_at(100 + GRACE - 1, task(), orphan()) == []


def test_opens_exactly_at_orphan_grace_on_the_task_of_the_source_thread():
    # seed002: the wake names node "other-id", never delegated; its source thread is a1's
    # child thread, so it sits on a1 (from 10:01:43.2, and to the end).
    assert open_at(100 + GRACE, task(), orphan()) == [("task", TASK)]


def test_next_change_is_when_orphan_grace_ends():
    assert min(rule.due_times(snapshot(task(), orphan()), SETTINGS, at(100)).values()) == at(
        100 + GRACE
    )


def test_a_task_only_reported_is_still_unknown():
    views = task(), orphan(), unknown_task("task:other-id")
    assert open_at(3600, *views) == [("task", TASK)]


def test_resolves_when_the_named_task_becomes_known():
    views = task(), orphan(), task("task:other-id", child="thread:other")
    assert open_at(3600, *views) == []


def test_sits_on_the_target_thread_without_a_task_for_the_source_thread():
    assert open_at(3600, orphan(source_thread="thread:unknown")) == [("thread", PARENT)]


def test_prefers_the_task_that_is_not_a_follow_up():
    views = task("task:follow", follow_up_of=TASK, delegated=0), task(TASK, delegated=50), orphan()
    assert open_at(3600, *views) == [("task", TASK)]


def test_a_wake_naming_a_known_task_is_not_an_orphan():
    assert open_at(3600, task(), orphan(source=("task", TASK))) == []


def test_other_wake_kinds_are_not_orphans():
    views = task(), orphan(source=("manual", "task:other-id"))
    assert open_at(3600, *views) == []


def test_one_finding_per_subject_with_all_its_orphans():
    views = task(), orphan(), wake("w2", source=("task", "task:x"), queued=200, to=PARENT)
    [finding] = rule.findings(snapshot(*views), SETTINGS, at(3600))
    assert finding.evidence["events"] == ["w1/queued", "w2/queued"]
    assert finding.evidence["named_tasks"] == ["task:other-id", "task:x"]


def test_wake_to_the_child_thread_sits_on_the_task_of_its_source_thread():
    views = (
        task(),
        task("task:child-of-child", parent=CHILD, child="thread:gc"),
        orphan(to=CHILD, source_thread="thread:gc"),
    )
    assert open_at(3600, *views) == [("task", "task:child-of-child")]
