"""A page left open all day: its socket stays open while nothing happens, on Redis too,
and closes only for a reason, with that reason's code.

On the Redis channel layer a socket reads its channel with BZPOPMIN, 5 s at a time;
redis-py's own read timeout was 5 s as well, so an idle socket raced the two and was
closed with 1011 every 10 to 30 s, a traceback each time.
"""

import asyncio
import logging

import pytest
from asgiref.sync import sync_to_async
from channels.layers import channel_layers, get_channel_layer
from django.conf import settings as django_settings

from supervisor.core.ingest.apply import apply_events
from supervisor.live import consumers, groups
from supervisor.live.relay import relay
from supervisor.live.rendering import page_of
from tests.support.cast import make_user
from tests.support.faults.services import Redis, missing_tools
from tests.support.live import (
    CLOSED_4401,
    CURSOR,
    SEED000,
    frames_until_quiet,
    latest_change_id,
    live_list_socket,
    logged_in,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

# Over twice the layer client's read timeout (20 s), and past the 10 to 30 s in which
# the old race always closed a socket.
IDLE = 45  # seconds
CLOSED_4503 = {"type": "websocket.close", "code": 4503}


@pytest.mark.services
async def test_an_idle_socket_on_redis_stays_open_and_gets_the_next_frame(source):
    assert "Redis" in django_settings.CHANNEL_LAYERS["default"]["BACKEND"]
    user = await sync_to_async(make_user)("ws-idle", "operator")
    _, cookie = await sync_to_async(logged_in)(user)
    communicator = await live_list_socket(cookie)

    # receive_nothing raises what the consumer raised (it looks before it waits), and a
    # close would be output.
    for _ in range(int(IDLE / 5)):
        assert await communicator.receive_nothing(timeout=5, interval=0.5)

    await sync_to_async(apply_events)(source, SEED000[:12])
    assert await frames_until_quiet(communicator)
    # Its session is still followed through the layer: deactivation closes it with 4401.
    user.is_active = False
    await sync_to_async(user.save)()
    assert await communicator.receive_output(timeout=5) == CLOSED_4401


@pytest.fixture
def own_redis_layer():
    """The channel layer on a redis-server of the test's own, which it may stop."""
    reason = missing_tools()
    if reason:
        pytest.skip(f"needs a redis-server of its own: {reason}")
    redis = Redis()
    redis.start()
    layers = django_settings.CHANNEL_LAYERS
    django_settings.CHANNEL_LAYERS = {
        "default": {
            **layers["default"],
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {**layers_config(), "hosts": [{"address": redis.url(0)}]},
        }
    }
    channel_layers.backends.clear()
    try:
        yield redis
    finally:
        django_settings.CHANNEL_LAYERS = layers
        channel_layers.backends.clear()
        redis.destroy()


def layers_config() -> dict:
    """The production layer's settings (supervisor/settings.py), whatever this run uses."""
    from supervisor.settings import redis_channel_layer

    return redis_channel_layer("redis://unused")["CONFIG"]


async def test_a_socket_whose_channel_layer_is_lost_closes_with_4503_and_no_traceback(
    own_redis_layer, caplog
):
    user = await sync_to_async(make_user)("ws-layer-lost", "viewer")
    _, cookie = await sync_to_async(logged_in)(user)
    communicator = await live_list_socket(cookie)
    caplog.set_level(logging.WARNING)

    own_redis_layer.stop()

    # 4503 "try again": the page reconnects and resumes from its cursor.
    assert await communicator.receive_output(timeout=30) == CLOSED_4503
    await asyncio.sleep(0.1)
    lost = [r for r in caplog.records if "channel layer" in r.getMessage()]
    assert len(lost) == 1, [r.getMessage() for r in caplog.records]
    assert lost[0].exc_info is None, "one line, no traceback"


async def test_a_socket_its_groups_forgot_joins_again_and_catches_up(source, monkeypatch):
    """What a Redis restart does to every socket, and a channel over capacity to one
    frame: the socket is not in its page's group when the relay sends. It joins again
    and gets the change all the same (it stayed open and deaf before)."""
    monkeypatch.setattr(consumers, "KEEP_EVERY", 0.5)
    monkeypatch.setattr(consumers, "KEEP_GRACE", 0.2)
    user = await sync_to_async(make_user)("ws-forgotten", "viewer")
    _, cookie = await sync_to_async(logged_in)(user)
    communicator = await live_list_socket(cookie)
    page = page_of("list", 0, False)
    layer = get_channel_layer()
    for channel in list(relay._watchers[page]):
        await layer.group_discard(groups.page(page), channel)

    await sync_to_async(apply_events)(source, SEED000[:12])

    frames = await frames_until_quiet(communicator, timeout=3)
    cursors = [int(m.group(1)) for f in frames for m in [CURSOR.search(f)] if m]
    assert cursors and cursors[-1] == await sync_to_async(latest_change_id)()
    await communicator.disconnect()
