"""Ingest keeps each task request's answer (issue 42): a known task of the parent thread
with the request id, whatever order the request and the delegation arrive in."""

import uuid

import pytest

from supervisor.core.access.sources import do_create_source
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import TaskRequest

pytestmark = pytest.mark.django_db


def requested(n: int, request_id: str, parent: str = "thread:lead") -> dict:
    return {
        "id": f"req-{n}",
        "type": "task.requested",
        "at": f"2026-12-01T10:00:0{n}.000Z",
        "data": {"parent_thread": parent, "client_request_id": request_id, "title": "Audit"},
    }


def delegated(n: int, request_id: str, parent: str = "thread:lead") -> dict:
    return {
        "id": f"del-{n}",
        "type": "task.delegated",
        "at": f"2026-12-01T10:00:0{n}.000Z",
        "data": {
            "task": "task:a",
            "parent_thread": parent,
            "child_thread": "thread:child",
            "title": "Audit",
            "client_request_id": request_id,
        },
    }


def answers(*batches) -> dict[str, bool]:
    source, _ = do_create_source(f"s-{uuid.uuid4()}")
    for batch in batches:
        result = apply_events(source, batch)
        assert not result.rejected, result.rejected
    rows = TaskRequest.objects.filter(namespace_id=source.namespace_id)
    return dict(rows.values_list("client_request_id", "answered"))


def test_a_request_is_answered_by_its_delegation_in_either_order():
    assert answers([requested(1, "r1")]) == {"r1": False}
    assert answers([requested(1, "r1")], [delegated(2, "r1")]) == {"r1": True}
    assert answers([delegated(2, "r1")], [requested(1, "r1")]) == {"r1": True}
    assert answers([requested(1, "r1"), delegated(2, "r1")]) == {"r1": True}


def test_a_delegation_from_another_thread_or_with_another_id_answers_nothing():
    assert answers([requested(1, "r1")], [delegated(2, "r1", parent="thread:other")]) == {
        "r1": False
    }
    assert answers([requested(1, "r1")], [delegated(2, "r2")]) == {"r1": False}


def test_a_later_description_of_the_task_moves_the_answer_an_earlier_one_does_not():
    moved = {"r1": False, "r2": True}
    asked = [requested(1, "r1"), requested(2, "r2")]
    assert answers(asked, [delegated(3, "r1")], [delegated(4, "r2")]) == moved
    # The earlier description arrives last: the later one still stands.
    assert answers(asked, [delegated(4, "r2")], [delegated(3, "r1")]) == moved
