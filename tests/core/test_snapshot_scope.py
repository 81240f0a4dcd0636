"""A subject's snapshot reads what its rules need, not its parent's whole family: a
parent with thousands of tasks made each due task load them all, reports included."""

import pytest

from supervisor.core.ingest import apply_events
from supervisor.core.loader import load_for_subjects

pytestmark = pytest.mark.django_db

AT = "2026-11-05T22:40:00.000Z"


def delegated(task_id: str, title: str, child: str) -> dict:
    return {
        "id": f"delegated-{task_id}",
        "type": "task.delegated",
        "at": AT,
        "data": {
            "task": task_id,
            "parent_thread": "thread:parent",
            "child_thread": child,
            "title": title,
            "mode": "async",
            "prompt": "p",
        },
    }


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


def test_a_thread_snapshot_reads_its_task_requests_and_the_tasks_answering_them(source):
    # issue 31: delegation_never_started judges the parent thread on its requests and
    # the delegations with their request ids; the parent's other tasks are not read.
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
    assert sorted(r.client_request_id for r in snap.requests) == ["req-1", "req-2"]
    assert set(snap.tasks) == {"task:answer"}
