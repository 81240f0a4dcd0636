"""A batch PostgreSQL rolled back to break a deadlock is tried again whole, and applied
once (the rest of the concurrency tests need PostgreSQL: tests/test_services.py)."""

import pytest
from django.db import OperationalError, transaction

from supervisor.core.ingest import batch
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import DeadLetter, IngestedEvent, Run, Source, Task, TaskReport
from supervisor.core.store import entity_locks
from tests.support.factories import task_events

pytestmark = pytest.mark.django_db(transaction=True)


class Deadlock(Exception):
    sqlstate = "40P01"


def rolled_back(code="40P01"):
    cause = Deadlock()
    cause.sqlstate = code
    error = OperationalError("deadlock detected")
    error.__cause__ = cause
    return error


@pytest.fixture
def fails_first(monkeypatch):
    """The batch's transaction fails late (after its rows are written) `times` times."""
    calls = {"n": 0, "times": 1, "code": "40P01"}
    original = batch._record_changes

    def record(source, result):
        calls["n"] += 1
        if calls["n"] <= calls["times"]:
            raise rolled_back(calls["code"])
        return original(source, result)

    monkeypatch.setattr(batch, "_record_changes", record)
    monkeypatch.setattr(entity_locks.time, "sleep", lambda seconds: None)
    return calls


def test_a_batch_rolled_back_by_a_deadlock_is_applied_once_when_tried_again(source, fails_first):
    events = [*task_events(1), *task_events(2), {"id": "bad", "type": "task.delegated"}]
    result = apply_events(source, events)
    assert fails_first["n"] == 2
    assert (result.accepted, result.duplicates, len(result.rejected)) == (len(events) - 1, 0, 1)
    assert result.touched_tasks == {"task:t1", "task:t2"}
    assert IngestedEvent.objects.count() == len(events) - 1
    assert DeadLetter.objects.count() == 1
    assert Task.objects.filter(known=True).count() == 2
    assert TaskReport.objects.count() == sum(e["type"] == "task.reported" for e in events)
    assert Run.objects.filter(finished_event__isnull=False).count() == 2
    source = Source.objects.get(pk=source.pk)
    assert (source.events_accepted, source.events_rejected) == (len(events) - 1, 1)


def test_a_serialization_failure_is_tried_again_too(source, fails_first):
    fails_first["code"] = "40001"
    assert apply_events(source, task_events(1)).accepted == len(task_events(1))


def test_the_retries_are_bounded(source, fails_first):
    fails_first["times"] = entity_locks.ATTEMPTS
    with pytest.raises(OperationalError):
        apply_events(source, task_events(1))
    assert fails_first["n"] == entity_locks.ATTEMPTS
    assert not IngestedEvent.objects.exists()


def test_other_errors_are_not_tried_again(source, fails_first):
    fails_first["code"] = "57014"  # query cancelled
    with pytest.raises(OperationalError):
        apply_events(source, task_events(1))
    assert fails_first["n"] == 1


def test_inside_a_callers_transaction_the_batch_is_not_tried_again(source, fails_first):
    # Only the outermost transaction can run again; the caller's decides.
    with pytest.raises(OperationalError), transaction.atomic():
        apply_events(source, task_events(1))
    assert fails_first["n"] == 1
    assert not IngestedEvent.objects.exists()
