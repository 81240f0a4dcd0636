"""A subject's snapshot reads what its rules need, not its parent's whole family: a
parent with thousands of tasks made each due task load them all, reports included."""

import pytest

from supervisor.core.detection.evaluate import affected_subjects
from supervisor.core.facts.loader import load_for_subjects
from supervisor.core.ingest.apply import apply_events
from supervisor.core.rules.orphan_wake import names_unknown_task
from tests.support.delegations import AT, delegated

pytestmark = pytest.mark.django_db


def test_a_task_snapshot_reads_its_same_work_siblings_and_not_the_rest_of_the_family(source):
    events = [
        delegated("task:subject", "Port the retry loop", "thread:child-subject"),
        # The same work again (white space aside): duplicate_delegation compares them.
        delegated("task:again", "Port  the retry loop ", "thread:child-again"),
        *(delegated(f"task:other-{n}", f"Other work {n}", f"thread:child-{n}") for n in range(5)),
        # Delegated from the subject's own child thread: its rules read these too.
        {
            **delegated("task:grandchild", "Sub-step", "thread:grandchild"),
            "data": {
                **delegated("task:grandchild", "Sub-step", "thread:grandchild")["data"],
                "parent_thread": "thread:child-subject",
            },
        },
    ]
    apply_events(source, events)
    snap = load_for_subjects(source.namespace_id, {"task:subject"}, set())
    assert set(snap.tasks) == {"task:subject", "task:again", "task:grandchild"}


def test_a_thread_snapshot_reads_only_its_task_requests_no_delegation_answers(source):
    # delegation_never_started judges the parent thread on its requests that no known
    # delegation answers (the same request id); the answered ones and the parent's
    # tasks are not read.
    def requested(request_id: str, thread: str = "thread:parent") -> dict:
        return {
            "id": f"requested-{request_id}",
            "type": "task.requested",
            "at": AT,
            "data": {"parent_thread": thread, "client_request_id": request_id},
        }

    answer = delegated("task:answer", "Port the retry loop", "thread:child-answer")
    answer["data"]["client_request_id"] = "req-1"
    events = [
        requested("req-1"),
        requested("req-2"),
        requested("req-elsewhere", thread="thread:elsewhere"),
        answer,
        *(delegated(f"task:other-{n}", f"Other work {n}", f"thread:child-{n}") for n in range(5)),
    ]
    apply_events(source, events)
    snap = load_for_subjects(source.namespace_id, set(), {"thread:parent"})
    assert sorted(r.client_request_id for r in snap.requests) == ["req-2"]
    assert set(snap.tasks) == set()


def _wake_to_parent(wake: str, task: str, child: str) -> dict:
    return {
        "id": f"queued-{wake}",
        "type": "wake.queued",
        "at": AT,
        "data": {
            "wake": wake,
            "thread": "thread:parent",
            "source": {"kind": "task", "task": task, "thread": child},
            "summary": f"{task} done",
        },
    }


def test_the_parents_wakes_naming_known_siblings_do_not_load_the_siblings(source):
    # Every subject reads the wakes to its parent (what reached it); the siblings they
    # name are read only as known, and an unknown one with the task of its child thread.
    events = [
        delegated("task:subject", "Port the retry loop", "thread:child-subject"),
        *(delegated(f"task:other-{n}", f"Other work {n}", f"thread:child-{n}") for n in range(5)),
        *(_wake_to_parent(f"w{n}", f"task:other-{n}", f"thread:child-{n}") for n in range(5)),
        # A wake from task:other-0's child thread naming a task never delegated.
        _wake_to_parent("w-ghost", "task:ghost", "thread:child-0"),
    ]
    apply_events(source, events)
    snap = load_for_subjects(source.namespace_id, {"task:subject"}, set())
    assert set(snap.wakes) == {*(f"w{n}" for n in range(5)), "w-ghost"}
    assert snap.known_beside == {f"task:other-{n}" for n in range(1, 5)}
    # The orphan's sender is read in full: orphan_wake puts the flag on it.
    assert set(snap.tasks) == {"task:subject", "task:other-0"}
    assert [w.id for w in snap.wakes.values() if names_unknown_task(snap, w)] == ["w-ghost"]


def test_a_task_snapshot_reads_its_follow_ups_under_the_threads_its_wakes_went_to(source):
    # misrouted_wake: the subject's wake went to thread:review, where a follow-up of it
    # was delegated (with a child thread of its own): the target is right.
    follow_up = delegated("task:follow-up", "Later work", "thread:child-follow-up")
    follow_up["data"] |= {"parent_thread": "thread:review", "follow_up_of": "task:subject"}
    elsewhere = delegated("task:unrelated", "Review", "thread:child-unrelated")
    elsewhere["data"]["parent_thread"] = "thread:review"
    wake = {
        "id": "wake-review",
        "type": "wake.queued",
        "at": AT,
        "data": {
            "wake": "thread:review:wake:1",
            "thread": "thread:review",
            "source": {"kind": "task", "task": "task:subject", "thread": "thread:child-subject"},
            "summary": "done",
        },
    }
    subject = delegated("task:subject", "Port the retry loop", "thread:child-subject")
    apply_events(source, [subject, follow_up, elsewhere])
    snap = load_for_subjects(source.namespace_id, {"task:subject"}, set())
    assert "task:follow-up" not in snap.tasks  # no wake went there: not read
    apply_events(source, [wake])
    snap = load_for_subjects(source.namespace_id, {"task:subject"}, set())
    assert "task:follow-up" in snap.tasks and "task:unrelated" not in snap.tasks


def test_a_follow_up_arriving_has_the_task_it_follows_up_judged_again(source):
    # Its parent may be where the earlier task's wake went (misrouted_wake resolves).
    follow_up = delegated("task:follow-up", "Later work", "thread:child-follow-up")
    follow_up["data"] |= {"parent_thread": "thread:review", "follow_up_of": "task:subject"}
    subject = delegated("task:subject", "Port the retry loop", "thread:child-subject")
    apply_events(source, [subject, follow_up])
    tasks, _ = affected_subjects(source.namespace_id, {"task:follow-up"}, set())
    assert "task:subject" in tasks


def test_a_task_arriving_has_the_thread_its_wake_went_to_judged_again(source):
    # A wake naming a task not yet known, sent to a thread that is not the task's parent,
    # opens orphan_wake on that thread; the task's delegation arriving must resolve it there.
    wake = {
        "id": "wake-astray",
        "type": "wake.queued",
        "at": AT,
        "data": {
            "wake": "thread:elsewhere:wake:1",
            "thread": "thread:elsewhere",
            "source": {"kind": "task", "task": "task:subject", "thread": "thread:child-subject"},
            "summary": "done",
        },
    }
    apply_events(source, [wake, delegated("task:subject", "Port", "thread:child-subject")])
    _, threads = affected_subjects(source.namespace_id, {"task:subject"}, set())
    assert "thread:elsewhere" in threads


def _parent_run(ordinal: int, finished_at: str | None) -> list[dict]:
    run = f"thread:parent:{ordinal}"
    events = [
        {
            "id": f"requested-{run}",
            "type": "run.requested",
            "at": AT,
            "data": {
                "thread": "thread:parent",
                "run": run,
                "ordinal": ordinal,
                "trigger": {"kind": "message"},
            },
        }
    ]
    if finished_at is not None:
        events.append(
            {
                "id": f"finished-{run}",
                "type": "run.finished",
                "at": finished_at,
                "data": {
                    "thread": "thread:parent",
                    "run": run,
                    "status": "completed",
                    "summary": "",
                },
            }
        )
    return events


def test_of_a_thread_only_a_parent_here_the_unfinished_runs_and_the_last_finished_are_read(
    source,
):
    # never_delivered reads whether the parent has a run under way and when its last run
    # finished; a parent's runs grow with every wake it takes.
    finished = [f"2026-11-05T22:4{n}:00Z" for n in range(1, 6)]
    events = [
        delegated("task:subject", "Port the retry loop", "thread:child-subject"),
        *(event for n, when in enumerate(finished) for event in _parent_run(n + 1, when)),
        *_parent_run(6, None),
    ]
    events += _parent_run(7, "2026-11-05T22:41:30Z")  # finished before the latest
    apply_events(source, events)
    snap = load_for_subjects(source.namespace_id, {"task:subject"}, set())
    assert set(snap.runs) == {"thread:parent:5", "thread:parent:6"}
    # A parent that is also a subject's child thread has all its runs read.
    child = delegated("task:parent", "Lead", "thread:parent")
    child["data"]["parent_thread"] = "thread:grandparent"
    apply_events(source, [child])
    snap = load_for_subjects(source.namespace_id, {"task:subject", "task:parent"}, set())
    assert set(snap.runs) == {f"thread:parent:{n}" for n in range(1, 8)}
