"""The live socket's gate: our Origin and a live session, or no socket at all.

A missing Origin is refused: browsers always send one on a WebSocket handshake, so a
handshake without it is a script or a tool, and only a session cookie would vouch for
it; supervisor/live/origin.py refuses it before the session is read.

Our origin is the scheme, host and port of the socket's own Host header (or one of
CSRF_TRUSTED_ORIGINS), with the host in ALLOWED_HOSTS. WebsocketCommunicator sends no
Host header: then our origin is an allowed host on the port the server listens on (the
scope's server, else PORT: 8000 in the tests), which is what ORIGIN says.
"""

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from supervisor.asgi import application
from supervisor.core import clock
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Task
from tests.support.cast import make_user
from tests.support.live import ORIGIN, SEED000, frames_until_quiet, session_cookie

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

PATH = "/ws/live/?view=list"


async def connects(headers, path=PATH, **scope) -> tuple[bool, int | None]:
    """Whether the handshake is accepted; `scope` adds what a server would put there
    (`scheme`, `server`)."""

    async def app(base_scope, receive, send):
        return await application({**base_scope, **scope}, receive, send)

    communicator = WebsocketCommunicator(app, path, headers=list(headers))
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


def origin(value: str) -> tuple[bytes, bytes]:
    return (b"origin", value.encode())


def host(value: str) -> tuple[bytes, bytes]:
    return (b"host", value.encode())


@pytest.mark.parametrize(
    "other", ["http://127.0.0.1:9999", "http://localhost:9999", "http://127.0.0.1"]
)
async def test_our_host_on_another_port_is_refused(cookie, other):
    assert await connects([origin(other), cookie]) == (False, 4403)
    assert await connects([origin(other), host("127.0.0.1:8000"), cookie]) == (False, 4403)


@pytest.mark.parametrize("other", ["https://127.0.0.1:8000", "https://localhost:8000"])
async def test_our_host_and_port_on_the_other_scheme_is_refused(cookie, other):
    assert await connects([origin(other), cookie]) == (False, 4403)
    assert await connects([origin(other), host(other.split("//")[1]), cookie]) == (False, 4403)


async def test_the_host_header_names_our_origin(cookie):
    assert (await connects([origin("http://localhost:9999"), host("localhost:9999"), cookie]))[0]
    assert (await connects([origin("http://[::1]:8000"), host("[::1]:8000"), cookie]))[0]
    refused = [origin("http://localhost:8000"), host("127.0.0.1:8000"), cookie]
    assert await connects(refused) == (False, 4403)


async def test_a_host_outside_allowed_hosts_is_refused_even_as_our_own(cookie):
    headers = [origin("http://evil.example:8000"), host("evil.example:8000"), cookie]
    assert await connects(headers) == (False, 4403)


async def test_without_a_host_header_the_server_s_port_is_ours(cookie):
    server = ["127.0.0.1", 9000]
    assert (await connects([origin("http://127.0.0.1:9000"), cookie], server=server))[0]
    assert await connects([ORIGIN, cookie], server=server) == (False, 4403)


async def test_a_wss_socket_s_origin_is_https(cookie):
    assert (await connects([origin("https://127.0.0.1:8000"), cookie], scheme="wss"))[0]
    assert await connects([ORIGIN, cookie], scheme="wss") == (False, 4403)


async def test_with_supervisor_https_our_origin_is_https(cookie, settings):
    settings.HTTPS = True
    settings.ALLOWED_HOSTS = ["supervisor.example.com"]
    ours = host("supervisor.example.com")
    assert (await connects([origin("https://supervisor.example.com"), ours, cookie]))[0]
    plain = [origin("http://supervisor.example.com"), ours, cookie]
    assert await connects(plain) == (False, 4403)


async def test_behind_a_tls_proxy_its_header_says_the_scheme(cookie, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.ALLOWED_HOSTS = ["supervisor.example.com"]
    ours = host("supervisor.example.com")
    secure = (b"x-forwarded-proto", b"https")
    assert (await connects([origin("https://supervisor.example.com"), ours, secure, cookie]))[0]
    plain = [origin("http://supervisor.example.com"), ours, secure, cookie]
    assert await connects(plain) == (False, 4403)
    unproxied = [origin("https://supervisor.example.com"), ours, cookie]
    assert await connects(unproxied) == (False, 4403)


async def test_a_trusted_origin_is_accepted_when_its_host_is_allowed(cookie, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://dash.example.com", "https://*.teams.example"]
    settings.ALLOWED_HOSTS = ["127.0.0.1", "dash.example.com", ".teams.example"]
    proxied = host("127.0.0.1:8000")  # a proxy that passes its own Host
    assert (await connects([origin("https://dash.example.com"), proxied, cookie]))[0]
    assert (await connects([origin("https://ops.teams.example"), proxied, cookie]))[0]
    for other in ["http://dash.example.com", "https://dash.example.com:8443"]:
        assert await connects([origin(other), proxied, cookie]) == (False, 4403)
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    assert await connects([origin("https://dash.example.com"), proxied, cookie]) == (False, 4403)


@pytest.mark.parametrize(
    "headers",
    [
        [ORIGIN, origin("https://evil.example")],
        [origin("https://evil.example"), ORIGIN],
        [origin("http://127.0.0.1:8000/")],
        [origin("http://op@127.0.0.1:8000")],
        [origin("HTTP://127.0.0.1:8000 ")],
        [origin("http://127.0.0.1:99999")],
        [ORIGIN, host("127.0.0.1:8000"), host("evil.example")],
    ],
)
async def test_an_ambiguous_or_malformed_origin_is_refused(cookie, headers):
    assert await connects([*headers, cookie]) == (False, 4403)
