"""The real PostgreSQL and Redis of the second CI run (skipped when not configured)."""

import threading

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import connection, connections

from supervisor.celery import app
from supervisor.core.ingest import apply_events
from supervisor.core.models import IngestedEvent, Run, Source, Task
from supervisor.core.sources import do_create_source
from tests.factories import task_events

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
