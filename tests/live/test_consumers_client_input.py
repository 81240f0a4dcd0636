"""What the live socket reads from the client: ids within the database's bigint, or the
socket is closed with 4400; never a traceback in the log. A bad id in the query is
closed after the handshake: refused at the handshake, as it was, a browser
gets an HTTP 403 and sees no close code at all."""

import json
import logging

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from supervisor.asgi import application
from supervisor.core.ingest.apply import apply_events
from tests.support.cast import make_user
from tests.support.live import ORIGIN, SEED000, frames_until_quiet, session_cookie

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

BIGINT_MAX = 2**63 - 1
CLOSED_4400 = {"type": "websocket.close", "code": 4400}
NINETY_DIGITS = "9" * 90


@pytest.fixture
def cookie(db):
    return session_cookie(make_user("ws-typist", "viewer"))


@pytest.fixture
def log(caplog):
    caplog.set_level(logging.DEBUG)
    return caplog


def assert_no_traceback(log) -> None:
    failed = [r for r in log.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not failed, [r.getMessage() for r in failed]


async def assert_opened_then_closed_with_4400(communicator) -> None:
    """Accepted (a browser sees the close code only on an open socket), then closed with
    4400 before anything else is sent."""
    assert await communicator.connect() == (True, None)
    assert await communicator.receive_output(timeout=2) == CLOSED_4400
    # A resume the client sent before it read the close is ignored.
    await communicator.send_json_to({"resume": 0})
    assert await communicator.receive_nothing(timeout=0.2)
    assert await communicator.receive_nothing(timeout=0)  # raises what the consumer raised


def with_query(raw: bytes):
    """The app, handed a raw query string (a client may send any bytes there)."""

    async def app(scope, receive, send):
        return await application({**scope, "query_string": raw}, receive, send)

    return app


@pytest.mark.parametrize(
    "query",
    [
        f"view=task&id={NINETY_DIGITS}",
        f"view=list&after={NINETY_DIGITS}",
        f"view=task&id={BIGINT_MAX + 1}",
        f"view=list&after={BIGINT_MAX + 1}",
        "view=list&after=1e400",
        "view=list&after=-1",
        "view=task&id=-5",
        "view=task&id=%2B5",  # "+5": int() takes it
        "view=task&id=1_0",  # int() takes it
        "view=task&id=%D9%A3",  # an Arabic-Indic three: int() takes it
        "view=task&id=%FF",
        "view=task&id=",
        "view=task&id=%00",
        "view=task&id=1&after=%E2%80%AE1",
        "view=nothing&id=1",
    ],
)
async def test_a_query_id_out_of_range_or_not_digits_is_closed_with_4400(cookie, log, query):
    communicator = WebsocketCommunicator(application, f"/ws/live/?{query}", [ORIGIN, cookie])
    await assert_opened_then_closed_with_4400(communicator)
    assert_no_traceback(log)


async def test_a_query_string_that_is_not_utf8_is_closed_with_4400(cookie, log):
    app = with_query(b"view=task&id=\xff\xfe")
    communicator = WebsocketCommunicator(app, "/ws/live/", [ORIGIN, cookie])
    await assert_opened_then_closed_with_4400(communicator)
    assert_no_traceback(log)


@pytest.mark.parametrize("path", ["/ws/live/5/", "/ws/live/5", "/ws/live/%00/", "/ws/", "/x"])
async def test_an_id_in_the_path_is_closed_with_4400_not_a_traceback(cookie, log, path):
    """The socket's ids are in its query; a path other than /ws/live/ raised "No route
    found" inside the application (a traceback, and no close code)."""
    communicator = WebsocketCommunicator(application, f"{path}?view=task&id=5", [ORIGIN, cookie])
    await assert_opened_then_closed_with_4400(communicator)
    stranger = WebsocketCommunicator(application, path, [ORIGIN])
    assert await stranger.connect() == (False, 4401)
    assert_no_traceback(log)


async def test_a_bad_id_from_a_stranger_or_a_foreign_page_keeps_their_refusal(cookie, log):
    """The session and the origin are judged first, at the handshake, as before."""
    stranger = WebsocketCommunicator(application, "/ws/live/?view=task&id=-1", [ORIGIN])
    assert await stranger.connect() == (False, 4401)
    foreign = [(b"origin", b"http://evil.example"), cookie]
    assert await WebsocketCommunicator(application, "/ws/live/?id=-1", foreign).connect() == (
        False,
        4403,
    )
    assert_no_traceback(log)


async def test_the_largest_ids_are_accepted(cookie, log):
    path = f"/ws/live/?view=task&id={BIGINT_MAX}&after={BIGINT_MAX}"
    communicator = WebsocketCommunicator(application, path, [ORIGIN, cookie])
    assert (await communicator.connect())[0]
    await communicator.send_json_to({"resume": BIGINT_MAX})
    assert await communicator.receive_nothing(timeout=0.5)
    await communicator.disconnect()
    assert_no_traceback(log)


@pytest.mark.parametrize(
    "message",
    [
        '{"resume": 1e400}',
        f'{{"resume": {NINETY_DIGITS}}}',
        json.dumps({"resume": BIGINT_MAX + 1}),
        '{"resume": -1}',
        '{"resume": 12.5}',
        '{"resume": true}',
        '{"resume": null}',
        '{"resume": "12"}',
        '{"resume": [1]}',
        json.dumps({"resume": "x" * 100_000}),  # a huge string
        "x" * 100_000,  # a huge message
    ],
)
async def test_a_bad_resume_closes_the_socket_with_4400(cookie, log, message):
    communicator = WebsocketCommunicator(application, "/ws/live/?view=list", [ORIGIN, cookie])
    assert (await communicator.connect())[0]
    await communicator.send_to(text_data=message)
    assert await communicator.receive_output(timeout=2) == CLOSED_4400
    assert_no_traceback(log)


@pytest.mark.parametrize(
    "message", ["[1]", '"resume"', "12", "null", "1e400", "not json", "{}", '{"ping": 1}']
)
async def test_a_message_that_is_not_a_resume_is_ignored(cookie, log, message, source):
    await sync_to_async(apply_events)(source, SEED000[:12])
    communicator = WebsocketCommunicator(application, "/ws/live/?view=list", [ORIGIN, cookie])
    assert (await communicator.connect())[0]
    await communicator.send_to(text_data=message)
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.send_json_to({"resume": 0})  # the socket still works
    assert await frames_until_quiet(communicator)
    await communicator.disconnect()
    assert_no_traceback(log)
