"""The live socket through the real ASGI app."""

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission

from supervisor.asgi import application
from supervisor.core import clock
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Task
from supervisor.jobs.evaluation import evaluate_touched
from tests.support.live import (
    CURSOR,
    ORIGIN,
    SEED000,
    change_ids_after,
    frames_until_quiet,
    latest_change_id,
    session_cookie,
)
from tests.support.workers import celery_worker, purge_broker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def socket(path="/ws/live/?view=list", headers=(ORIGIN,)):
    return WebsocketCommunicator(application, path, headers=list(headers))


async def test_an_anonymous_socket_is_refused():
    connected, _ = await socket().connect()
    assert not connected


async def test_a_socket_from_another_origin_is_refused(cookie):
    communicator = socket(headers=[(b"origin", b"https://evil.example"), cookie])
    connected, _ = await communicator.connect()
    assert not connected


async def test_a_logged_in_socket_from_our_origin_is_accepted(cookie):
    communicator = socket(headers=[ORIGIN, cookie])
    connected, _ = await communicator.connect()
    assert connected
    await communicator.disconnect()


async def test_a_reconnecting_socket_receives_exactly_the_changes_it_missed(cookie, source):
    await sync_to_async(apply_events)(source, SEED000[:12])
    seen = await sync_to_async(latest_change_id)()
    await sync_to_async(apply_events)(source, SEED000[12:])
    missed = await sync_to_async(change_ids_after)(seen)
    assert missed
    communicator = socket(headers=[ORIGIN, cookie])
    assert (await communicator.connect())[0]
    await communicator.send_json_to({"resume": seen})
    frames = await frames_until_quiet(communicator)
    assert [int(CURSOR.search(f).group(1)) for f in frames] == missed
    await communicator.disconnect()


async def test_a_task_page_gets_only_its_task_s_changes(cookie, source):
    await sync_to_async(apply_events)(source, SEED000)
    task = await sync_to_async(Task.objects.get)(task_id="node:delegated-task:review-a")
    communicator = socket(f"/ws/live/?view=task&id={task.pk}&after=0", headers=[ORIGIN, cookie])
    assert (await communicator.connect())[0]
    frames = await frames_until_quiet(communicator)
    assert frames and all("Review A" in f for f in frames)
    await communicator.disconnect()


@pytest.mark.slow
async def test_a_flag_opened_by_a_celery_worker_reaches_a_subscribed_socket(cookie, source):
    await sync_to_async(purge_broker)()
    communicator = socket(headers=[ORIGIN, cookie])
    assert (await communicator.connect())[0]
    await communicator.send_json_to({"resume": 0})
    assert await communicator.receive_nothing(timeout=0.5)
    with celery_worker():
        result = await sync_to_async(apply_events)(source, SEED000)
        await sync_to_async(evaluate_touched.delay)(
            source.namespace_id, sorted(result.touched_tasks), sorted(result.touched_threads)
        )
        received = ""
        while 'id="flag-opened"' not in received:
            received += await communicator.receive_from(timeout=30)
    assert 'data-kind="' in received
    await communicator.disconnect()


async def test_an_operator_socket_gets_the_action_forms(user, source):
    permission = await sync_to_async(Permission.objects.get)(codename="act")
    await sync_to_async(user.user_permissions.add)(permission)
    cookie = await sync_to_async(session_cookie)(user)
    await sync_to_async(apply_events)(source, SEED000)
    await sync_to_async(evaluate)(source.namespace_id, clock.now())
    task = await sync_to_async(Task.objects.get)(task_id__endswith="retry-port")
    communicator = socket(f"/ws/live/?view=task&id={task.pk}&after=0", headers=[ORIGIN, cookie])
    assert (await communicator.connect())[0]
    frames = "".join(await frames_until_quiet(communicator))
    assert "Acknowledge" in frames
    await communicator.disconnect()
