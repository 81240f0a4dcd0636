"""An open live socket follows its session: logged out, deactivated or with a changed
password it is closed with 4401 and sent nothing more; after a role change its frames
carry the action forms of the new role. Through the real ASGI app."""

import asyncio
import os
import subprocess
import sys
import time

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from supervisor.asgi import application
from supervisor.core.access.roles import do_set_role
from supervisor.core.ingest.apply import apply_events
from tests.support import workers
from tests.support.cast import make_user
from tests.support.live import (
    CLOSED_4401,
    ORIGIN,
    SEED000,
    frames_until_quiet,
    has_action_forms,
    live_list_socket,
    logged_in,
    snooze_a_flag_of,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

# The promise of supervisor/live/session.py's RECHECK: a socket that no message reaches
# sees its session's changes before its first frame after this many seconds.
RECHECK = 5.0


async def assert_closed_then_silent(communicator, source) -> None:
    assert await communicator.receive_output(timeout=2) == CLOSED_4401
    await sync_to_async(apply_events)(source, SEED000[:12])  # a change every page shows
    assert await communicator.receive_nothing(timeout=1.0)


async def test_a_socket_whose_session_logs_out_is_closed_and_gets_no_frame(source):
    user = await sync_to_async(make_user)("ws-leaver", "viewer")
    client, cookie = await sync_to_async(logged_in)(user)
    communicator = await live_list_socket(cookie)
    await sync_to_async(client.post)("/logout/")
    await assert_closed_then_silent(communicator, source)


async def test_logging_out_one_session_leaves_the_user_s_other_sessions_live(source):
    user = await sync_to_async(make_user)("ws-two-tabs", "viewer")
    leaving, leaving_cookie = await sync_to_async(logged_in)(user)
    _, staying_cookie = await sync_to_async(logged_in)(user)
    closing = await live_list_socket(leaving_cookie)
    staying = await live_list_socket(staying_cookie)
    await sync_to_async(leaving.post)("/logout/")
    assert await closing.receive_output(timeout=2) == CLOSED_4401
    await sync_to_async(apply_events)(source, SEED000[:12])
    assert await frames_until_quiet(staying)
    await staying.disconnect()


async def test_a_socket_of_a_deactivated_user_is_closed_and_gets_no_frame(source):
    user = await sync_to_async(make_user)("ws-gone", "operator")
    _, cookie = await sync_to_async(logged_in)(user)
    communicator = await live_list_socket(cookie)
    user.is_active = False
    await sync_to_async(user.save)()
    await assert_closed_then_silent(communicator, source)


async def test_a_socket_whose_user_s_password_changes_is_closed(source, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    user = await sync_to_async(make_user)("ws-rekeyed", "operator")
    _, cookie = await sync_to_async(logged_in)(user)
    communicator = await live_list_socket(cookie)
    user.set_password("a new password")
    await sync_to_async(user.save)()
    await assert_closed_then_silent(communicator, source)


async def test_a_log_in_elsewhere_leaves_the_socket_live(source):
    user = await sync_to_async(make_user)("ws-busy", "viewer")
    _, cookie = await sync_to_async(logged_in)(user)
    communicator = await live_list_socket(cookie)
    await sync_to_async(logged_in)(user)  # writes last_login
    await sync_to_async(apply_events)(source, SEED000[:12])
    assert await frames_until_quiet(communicator)
    await communicator.disconnect()


# --- role changes ----------------------------------------------------------------------


async def task_socket(task, cookie) -> tuple[WebsocketCommunicator, str]:
    path = f"/ws/live/?view=task&id={task.pk}&after=0"
    communicator = WebsocketCommunicator(application, path, [ORIGIN, cookie])
    assert (await communicator.connect())[0]
    return communicator, "".join(await frames_until_quiet(communicator))


async def next_frame_after_a_change(communicator, task) -> str:
    await sync_to_async(snooze_a_flag_of)(task)
    frame = await communicator.receive_from(timeout=3)
    assert "snoozed until" in frame  # the frame of that change
    return frame


async def test_a_demoted_operator_s_next_frame_has_no_action_forms(flagged_task):
    user = await sync_to_async(make_user)("ws-demoted", "operator")
    _, cookie = await sync_to_async(logged_in)(user)
    communicator, before = await task_socket(flagged_task, cookie)
    assert has_action_forms(before)
    await sync_to_async(do_set_role)(user, "viewer")
    assert not has_action_forms(await next_frame_after_a_change(communicator, flagged_task))
    await communicator.disconnect()


async def test_a_promoted_viewer_s_next_frame_has_the_action_forms(flagged_task):
    user = await sync_to_async(make_user)("ws-promoted", "viewer")
    _, cookie = await sync_to_async(logged_in)(user)
    communicator, before = await task_socket(flagged_task, cookie)
    assert before and not has_action_forms(before)
    await sync_to_async(do_set_role)(user, "operator")
    assert has_action_forms(await next_frame_after_a_change(communicator, flagged_task))
    await communicator.disconnect()


def set_role_in_another_process(username: str, role: str) -> None:
    """`manage.py shell` with the in-memory channel layer: no message reaches our sockets."""
    env = {**os.environ, **workers.test_database_env()}
    env.pop("CHANNEL_LAYER_URL", None)
    code = (
        "from django.contrib.auth import get_user_model;"
        "from supervisor.core.access.roles import do_set_role;"
        f"do_set_role(get_user_model().objects.get(username={username!r}), {role!r})"
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=workers.ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.slow
async def test_a_role_changed_by_another_process_reaches_the_socket_s_frames(flagged_task):
    user = await sync_to_async(make_user)("ws-elsewhere", "operator")
    _, cookie = await sync_to_async(logged_in)(user)
    communicator, before = await task_socket(flagged_task, cookie)
    assert has_action_forms(before)
    started = time.monotonic()
    await sync_to_async(set_role_in_another_process)("ws-elsewhere", "viewer")
    # Past the socket's last read of its session (at the latest when it went quiet).
    await asyncio.sleep(max(0.0, RECHECK + 0.2 - (time.monotonic() - started)))
    assert not has_action_forms(await next_frame_after_a_change(communicator, flagged_task))
    await communicator.disconnect()


async def test_a_frame_rendered_while_the_role_changes_still_reaches_the_socket(
    flagged_task, monkeypatch
):
    """The race CI met: the relay renders a batch for the pages open at that moment, and
    the socket moves to its new role's page before that frame is sent to the old one."""
    from supervisor.live.relay import relay
    from supervisor.live.rendering import Page

    user = await sync_to_async(make_user)("ws-mid-batch", "viewer")
    _, cookie = await sync_to_async(logged_in)(user)
    communicator, before = await task_socket(flagged_task, cookie)
    assert before and not has_action_forms(before)
    viewer_page, operator_page = (Page("task", flagged_task.pk, can) for can in (False, True))
    rendered, proceed = asyncio.Event(), asyncio.Event()
    render = relay._render

    async def render_then_hold(notes, pages):
        frames = await render(notes, pages)
        rendered.set()
        await proceed.wait()
        return frames

    monkeypatch.setattr(relay, "_render", render_then_hold)
    await sync_to_async(snooze_a_flag_of)(flagged_task)
    await asyncio.wait_for(rendered.wait(), timeout=3)  # rendered for the viewer's page
    await sync_to_async(do_set_role)(user, "operator")
    async with asyncio.timeout(3):  # the socket has moved to the operator's page
        while viewer_page in relay.pages() or operator_page not in relay.pages():
            await asyncio.sleep(0.01)
    proceed.set()
    frame = await communicator.receive_from(timeout=3)
    assert "snoozed until" in frame and has_action_forms(frame)
    await communicator.disconnect()
