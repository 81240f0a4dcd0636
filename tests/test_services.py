"""The real PostgreSQL and Redis of the second CI run (skipped when not configured)."""

import threading
import time

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import connection, connections, transaction

from supervisor.celery import app
from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import IngestedEvent, Namespace, Run, Source, Task, Thread
from tests.support.factories import task_events

pytestmark = pytest.mark.services


@pytest.mark.django_db(transaction=True)
def test_the_database_is_postgresql_through_psycopg3():
    assert connection.vendor == "postgresql"
    assert connection.Database.__name__ == "psycopg"


@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_of_one_namespace_store_each_event_once():
    do_create_source("origin", namespace="install")
    do_create_source("remote", namespace="install")
    events = [e for n in range(30) for e in task_events(n)]
    barrier = threading.Barrier(4)
    errors = []

    def send(name, batch):
        try:
            source = Source.objects.get(name=name)
            barrier.wait(timeout=10)
            for start in range(0, len(batch), 25):
                apply_events(source, batch[start : start + 25])
        except Exception as exc:  # reported below; a thread cannot fail the test itself
            errors.append(exc)
        finally:
            connections.close_all()

    # Each source sends everything twice, from two threads, in opposite orders.
    threads = [
        threading.Thread(target=send, args=(name, batch))
        for name in ("origin", "remote")
        for batch in (events, events[::-1])
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    assert IngestedEvent.objects.count() == 2 * len(events)
    assert Task.objects.filter(known=True).count() == 30
    assert Run.objects.filter(finished_event__isnull=False).count() == 30


def _in_a_thread(target):
    errors = []

    def run():
        try:
            target()
        except Exception as exc:  # reported by the caller; a thread cannot fail the test
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


@pytest.mark.django_db(transaction=True)
def test_batches_naming_different_entities_of_one_namespace_do_not_wait_for_each_other():
    # One namespace, two sources; their tasks, runs, wakes and threads are all distinct.
    do_create_source("origin", namespace="install")
    do_create_source("remote", namespace="install")
    first = [
        {**e, "data": {**e["data"], "thread": "thread:lead-a"}} if e["type"] == "wake.queued" else e
        for e in task_events(1, prefix="a")
    ]
    first = [
        {**e, "data": {**e["data"], "parent_thread": "thread:lead-a"}}
        if e["type"] == "task.delegated"
        else e
        for e in first
    ]
    # An environment's first batch makes its row, which the second would wait for.
    apply_events(Source.objects.get(name="remote"), task_events(3, prefix="c")[:1])
    second_done = threading.Event()
    held = threading.Event()

    def hold_first_open():
        with transaction.atomic():
            apply_events(Source.objects.get(name="origin"), first)
            held.set()
            # Committed only once the other batch is through, or after 10 s.
            second_done.wait(timeout=10)

    holder, errors = _in_a_thread(hold_first_open)
    assert held.wait(timeout=10)
    started = time.monotonic()
    result = apply_events(Source.objects.get(name="remote"), task_events(2, prefix="b"))
    waited = time.monotonic() - started
    second_done.set()
    holder.join(timeout=30)
    assert not errors
    assert result.accepted == len(task_events(2, prefix="b"))
    assert waited < 5, f"the second batch waited {waited:.1f} s for the first one's commit"
    assert Task.objects.filter(known=True).count() == 3


@pytest.mark.django_db(transaction=True)
def test_a_batch_deadlocked_with_another_writer_is_tried_again_and_applied_once():
    """A writer that updates tasks, then threads, outside the namespace's row lock;
    ingest writes threads, then tasks. When the two cross, PostgreSQL rolls one back:
    ingest's batch then runs again whole."""
    source, _ = do_create_source("origin", namespace="install")
    events = task_events(1)
    apply_events(source, events[:1])  # the task and its threads exist
    task = Task.objects.get(task_id="task:t1")
    locked = threading.Event()

    def evaluation():
        with transaction.atomic():
            Task.objects.filter(pk=task.pk).update(evaluated_at=clock.now())
            locked.set()
            time.sleep(0.5)  # ingest is waiting for the task row by now
            Thread.objects.filter(thread_id="thread:lead").update(evaluated_at=clock.now())

    evaluator, errors = _in_a_thread(evaluation)
    assert locked.wait(timeout=10)
    result = apply_events(source, events[1:])  # writes thread:lead, then waits for the task
    evaluator.join(timeout=30)
    deadlocks = [e for e in errors if "deadlock" in str(e)]
    assert not [e for e in errors if e not in deadlocks]
    assert result.accepted == len(events) - 1
    assert IngestedEvent.objects.count() == len(events)
    assert Run.objects.filter(finished_event__isnull=False).count() == 1
    assert Task.objects.get(pk=task.pk).report_event == "t1-rep"


@pytest.mark.django_db(transaction=True)
def test_a_batch_waits_for_an_evaluation_holding_its_namespace_instead_of_deadlocking(caplog):
    """An evaluation locks the namespace's row, then records tasks and threads: a batch
    begins by sharing that row, so it waits for the evaluation before taking any row."""
    source, _ = do_create_source("origin", namespace="install")
    events = task_events(1)
    apply_events(source, events[:1])
    task = Task.objects.get(task_id="task:t1")
    locked = threading.Event()

    def evaluation():
        with transaction.atomic():
            Namespace.objects.select_for_update().get(pk=source.namespace_id)
            Task.objects.filter(pk=task.pk).update(evaluated_at=clock.now())
            locked.set()
            time.sleep(0.5)
            Thread.objects.filter(thread_id="thread:lead").update(evaluated_at=clock.now())

    evaluator, errors = _in_a_thread(evaluation)
    assert locked.wait(timeout=10)
    with caplog.at_level("INFO", logger="supervisor.core.store.entity_locks"):
        result = apply_events(source, events[1:])
    evaluator.join(timeout=30)
    assert not errors
    assert not [r for r in caplog.records if "rolled back" in r.getMessage()]
    assert result.accepted == len(events) - 1


def test_celery_sends_and_receives_through_redis():
    assert settings.CELERY_BROKER_URL.startswith("redis://")
    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=3)
        queue = conn.SimpleQueue("supervisor-test-roundtrip")
        try:
            queue.put({"hello": "redis"})
            message = queue.get(timeout=5)
            message.ack()
            assert message.payload == {"hello": "redis"}
        finally:
            queue.clear()
            queue.close()


def test_the_channel_layer_is_redis():
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    assert type(layer).__name__ == "RedisChannelLayer"

    async def roundtrip():
        channel = await layer.new_channel()
        await layer.group_add("supervisor-test", channel)
        await layer.group_send("supervisor-test", {"type": "ping", "n": 1})
        message = await layer.receive(channel)
        await layer.group_discard("supervisor-test", channel)
        return message

    assert async_to_sync(roundtrip)() == {"type": "ping", "n": 1}
