"""The live socket's gate: our Origin and a live session, or no socket at all.

A missing Origin is refused: browsers always send one on a WebSocket handshake, so a
handshake without it is a script or a tool, and only a session cookie would vouch for
it; Channels' AllowedHostsOriginValidator refuses it before the session is read.
"""

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from supervisor.asgi import application
from supervisor.core import clock
from supervisor.core.evaluate import evaluate
from supervisor.core.ingest import apply_events
from supervisor.core.models import Task
from tests.live.test_consumers import ORIGIN, SEED000, frames_until_quiet, session_cookie
from tests.web.cast import make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

PATH = "/ws/live/?view=list"


async def connects(headers, path=PATH) -> tuple[bool, int | None]:
    communicator = WebsocketCommunicator(application, path, headers=list(headers))
    connected, code = await communicator.connect()
    if connected:
        await communicator.disconnect()
    return connected, code


@pytest.fixture
def cookie(db):
    return session_cookie(make_user("ws-viewer", "viewer"))


async def test_our_origin_with_a_session_is_accepted(cookie):
    assert (await connects([ORIGIN, cookie]))[0]
    assert (await connects([(b"origin", b"http://localhost:8000"), cookie]))[0]


async def test_a_missing_origin_is_refused_even_with_a_session(cookie):
    assert not (await connects([cookie]))[0]


@pytest.mark.parametrize(
    "origin",
    [
        b"https://evil.example",
        b"http://127.0.0.1.evil.example",
        b"http://evil.example/127.0.0.1",
        b"null",
        b"",
        b"file://",
    ],
)
async def test_a_foreign_origin_is_refused_even_with_a_session(cookie, origin):
    assert not (await connects([(b"origin", origin), cookie]))[0]


async def test_a_stranger_is_refused_with_4401():
    assert await connects([ORIGIN]) == (False, 4401)


async def test_a_forged_session_cookie_is_refused():
    assert await connects([ORIGIN, (b"cookie", b"sessionid=not-a-session")]) == (False, 4401)


async def test_a_logged_out_session_is_refused(db):
    def logged_out_cookie():
        client = Client()
        client.force_login(make_user("ws-leaver", "viewer"))
        cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
        client.post("/logout/")
        return cookie

    cookie = await sync_to_async(logged_out_cookie)()
    assert await connects([ORIGIN, cookie]) == (False, 4401)


async def test_a_deactivated_user_is_refused(db):
    user = await sync_to_async(make_user)("ws-gone", "operator")
    cookie = await sync_to_async(session_cookie)(user)
    user.is_active = False
    await sync_to_async(user.save)()
    assert await connects([ORIGIN, cookie]) == (False, 4401)


async def test_a_viewer_s_socket_gets_no_action_forms(cookie, source):
    await sync_to_async(apply_events)(source, SEED000)
    await sync_to_async(evaluate)(source.namespace_id, clock.now())
    task = await sync_to_async(Task.objects.get)(task_id__endswith="retry-port")
    path = f"/ws/live/?view=task&id={task.pk}&after=0"
    communicator = WebsocketCommunicator(application, path, headers=[ORIGIN, cookie])
    assert (await communicator.connect())[0]
    frames = "".join(await frames_until_quiet(communicator))
    await communicator.disconnect()
    assert "flag" in frames  # the flag did reach the viewer, without its forms
    assert "Acknowledge" not in frames
    assert 'method="post"' not in frames.lower()
    assert "csrfmiddlewaretoken" not in frames
