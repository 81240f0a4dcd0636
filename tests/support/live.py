"""The live socket's tests: our Origin, a session's cookie, the frames a socket gets until it
goes quiet, the change log's cursor, and a list page's socket for a logged-in user."""

import re
from datetime import timedelta

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from supervisor.asgi import application
from supervisor.core import clock
from supervisor.core.flags.writers import do_snooze_flag
from supervisor.core.models import Change, Flag
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

ORIGIN = (b"origin", b"http://127.0.0.1:8000")
SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))["events"]
CURSOR = re.compile(r'id="live-cursor" data-change="(\d+)"')


def session_cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def frames_until_quiet(communicator, timeout=1.0) -> list[str]:
    frames = []
    while not await communicator.receive_nothing(timeout=timeout):
        frames.append(await communicator.receive_from())
    return frames


def change_ids_after(change_id: int) -> list[int]:
    return list(Change.objects.filter(id__gt=change_id).order_by("id").values_list("id", flat=True))


def latest_change_id() -> int:
    return Change.objects.order_by("-id").values_list("id", flat=True).first()


CLOSED_4401 = {"type": "websocket.close", "code": 4401}


def logged_in(user) -> tuple[Client, tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    return client, (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def live_list_socket(cookie) -> WebsocketCommunicator:
    """A list page's socket, live from the latest change."""
    communicator = WebsocketCommunicator(application, "/ws/live/?view=list", [ORIGIN, cookie])
    assert (await communicator.connect())[0]
    await communicator.send_json_to({"resume": await sync_to_async(latest_change_id)() or 0})
    assert await communicator.receive_nothing(timeout=0.3)
    return communicator


def snooze_a_flag_of(task) -> None:
    """A change on the task: its page's next frame re-renders the flags."""
    flag = Flag.objects.filter(task=task, state=Flag.OPEN).first()
    now = clock.now()
    do_snooze_flag(flag, now + timedelta(hours=1), now)


def has_action_forms(html: str) -> bool:
    # Live frames render forms without a request, so without a CSRF token field.
    forms = ['method="post"' in html.lower(), "Acknowledge" in html]
    assert len(set(forms)) == 1, "action forms come whole or not at all"
    return forms[0]
