"""Ingest's batch writes (one UPDATE per set of changed columns, COPY for new rows, and
upserts and appends from plain values) give exactly the rows the ORM would have
written, on SQLite and PostgreSQL."""

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from supervisor.core.access.sources import do_create_source
from supervisor.core.models import Change, IngestedEvent, Namespace, Task, Thread
from supervisor.core.store.batch_write import copy_rows, update_rows

pytestmark = pytest.mark.django_db

AT = datetime(2026, 11, 2, 9, 0, 0, 123456, tzinfo=UTC)


def test_rows_changing_different_columns_are_updated_by_column_set():
    ns = Namespace.objects.create(name="ns")
    parent = Thread.objects.create(namespace=ns, thread_id="thread:p")
    tasks = [Task.objects.create(namespace=ns, task_id=f"t{i}", title="old") for i in range(5)]
    changes = [
        (tasks[0].pk, {"title": "new 0", "status": "completed"}),
        (tasks[1].pk, {"status": "failed", "title": "new 1"}),  # the same columns
        (tasks[2].pk, {"reported_at": AT, "summary": 'quote " and \\ and \u00e9 and\nline'}),
        (tasks[3].pk, {"parent_thread_id": parent.pk, "status": None}),
    ]
    with CaptureQueriesContext(connection) as queries:
        statements = update_rows(Task, changes)
    assert statements == 3 == len(queries)
    rows = {t.task_id: t for t in Task.objects.all()}
    assert (rows["t0"].title, rows["t0"].status) == ("new 0", "completed")
    assert (rows["t1"].title, rows["t1"].status) == ("new 1", "failed")
    assert rows["t2"].reported_at == AT and rows["t2"].summary.endswith("and\nline")
    assert rows["t3"].parent_thread_id == parent.pk and rows["t3"].status is None
    assert rows["t4"].title == "old"  # untouched


def test_more_rows_than_a_statement_takes_are_cut_into_chunks():
    ns = Namespace.objects.create(name="ns")
    Task.objects.bulk_create(Task(namespace=ns, task_id=f"t{i}") for i in range(1203))
    changes = [(pk, {"title": f"title {pk}"}) for pk in Task.objects.values_list("pk", flat=True)]
    assert update_rows(Task, changes) == 3
    assert all(t.title == f"title {t.pk}" for t in Task.objects.all())


def test_copied_rows_match_what_bulk_create_writes():
    source, _ = do_create_source("copy")
    data = {"text": 'é " \\ \t tab', "nested": [1, {"a": None}], "big": 2**40}
    copy_rows(
        IngestedEvent,
        [
            IngestedEvent(source=source, event_id=f"e{i}", type="t", at=AT, env="x", data=data)
            for i in range(3)
        ],
    )
    stored = list(IngestedEvent.objects.order_by("event_id"))
    assert [e.event_id for e in stored] == ["e0", "e1", "e2"]
    assert all(e.data == data and e.at == AT and e.received_at is not None for e in stored)
    # Foreign keys from instances saved after the rows were made are filled in.
    ns = Namespace.objects.create(name="late")
    change = Change(at=AT, kind="task.updated", subject_type="task", subject_id="t")
    change.namespace = ns
    copy_rows(Change, [change])
    assert Change.objects.get(subject_id="t").namespace_id == ns.pk


@pytest.mark.parametrize("returning", [True, False])
def test_set_rows_inserts_and_overwrites_by_natural_key(monkeypatch, returning):
    from supervisor.core.store import batch_write

    # Without RETURNING (SQLite before 3.35) the ids are read back with a SELECT.
    monkeypatch.setattr(batch_write, "SQLITE_RETURNING", returning)
    ns = Namespace.objects.create(name="ns")
    kept = Task.objects.create(namespace=ns, task_id="t0", title="old", evaluated_at=AT)
    columns = ["namespace_id", "task_id", "title", "known", "reported_at", "status"]
    rows = [
        [ns.pk, f"t{i}", f'title "{i}" é', i % 2 == 0, AT if i else None, None] for i in range(700)
    ]
    ids = batch_write.set_rows(Task, "task_id", columns, rows)
    assert ids == dict(Task.objects.values_list("task_id", "id"))
    assert ids["t0"] == kept.pk
    stored = Task.objects.get(pk=kept.pk)
    assert (stored.title, stored.known, stored.reported_at) == ('title "0" é', True, None)
    assert stored.evaluated_at == AT  # a column it was not given stays
    assert Task.objects.get(task_id="t7").reported_at == AT
    assert Task.objects.count() == 700


def test_inserted_rows_match_what_the_orm_reads_back():
    from supervisor.core.store.batch_write import insert_rows

    ns = Namespace.objects.create(name="ns")
    insert_rows(
        Change,
        ["at", "namespace_id", "kind", "subject_type", "subject_id", "payload"],
        [(AT, ns.pk, "task.updated", "task", "t1", '{"a": [1, null]}')],
    )
    change = Change.objects.get()
    assert (change.at, change.kind, change.payload) == (AT, "task.updated", {"a": [1, None]})
    assert Change.objects.filter(at__gte=AT).exists()  # stored as the ORM compares it
