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
