"""Live frames are rendered once per page in the relay, hold what was committed together,
and reach only the sockets of the page (the role included) they were rendered for.
Through the real ASGI app."""

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from supervisor.asgi import application
from supervisor.core import clock
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Change
from supervisor.live import consumers, groups, relay
from supervisor.live.rendering import Page
from tests.support.cast import make_user
from tests.support.live import (
    CURSOR,
    ORIGIN,
    SEED000,
    change_ids_after,
    frames_until_quiet,
    has_action_forms,
    latest_change_id,
    live_list_socket,
    logged_in,
    snooze_a_flag_of,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

LIST = Page("list", 0, False)


def cursor(frame: str) -> int:
    return int(CURSOR.search(frame).group(1))


@pytest.fixture
def renders(monkeypatch):
    """The pages the relay renders a frame for, one entry per rendering; the consumers
    render nothing themselves on the way."""
    seen = []
    render_frame = relay.render_frame

    def counted(notes, page):
        seen.append(page)
        return render_frame(notes, page)

    def not_here(*args):
        raise AssertionError("a consumer rendered a live frame itself")

    monkeypatch.setattr(relay, "render_frame", counted)
    monkeypatch.setattr(consumers, "render_frame", not_here)
    return seen


@pytest.mark.slow
async def test_a_change_is_rendered_once_for_every_socket_of_a_page(cookie, source, renders):  # noqa: F811
    sockets = [await live_list_socket(cookie) for _ in range(5)]
    renders.clear()
    await sync_to_async(apply_events)(source, SEED000[:12])
    frames = [await frames_until_quiet(socket) for socket in sockets]
    assert frames[0] and all(got == frames[0] for got in frames)
    assert renders.count(LIST) == len(frames[0])
    for socket in sockets:
        await socket.disconnect()


async def test_the_changes_of_one_evaluation_come_in_one_frame(cookie, source, renders):  # noqa: F811
    await sync_to_async(apply_events)(source, SEED000)
    socket = await live_list_socket(cookie)
    before = await sync_to_async(latest_change_id)()
    await sync_to_async(evaluate)(source.namespace_id, clock.now())
    made = await sync_to_async(change_ids_after)(before)
    opened = await sync_to_async(Change.objects.filter(id__in=made, kind="flag.opened").count)()
    assert len(made) > 1 and opened > 1  # several changes, committed together
    frames = await frames_until_quiet(socket)
    assert len(frames) == 1
    assert cursor(frames[0]) == made[-1]
    assert frames[0].count('id="flag-opened"') == opened  # a notice for each flag
    await socket.disconnect()


async def task_page_socket(task, role: str) -> tuple[WebsocketCommunicator, Page]:
    user = await sync_to_async(make_user)(f"frames-{role}", role)
    _, session = await sync_to_async(logged_in)(user)
    path = f"/ws/live/?view=task&id={task.pk}&after=0"
    socket = WebsocketCommunicator(application, path, [ORIGIN, session])
    assert (await socket.connect())[0]
    await frames_until_quiet(socket)  # the catch-up
    return socket, Page("task", task.pk, role == "operator")


@pytest.mark.slow
async def test_an_operator_and_a_viewer_of_a_page_get_each_their_own_frame(
    flagged_task,  # noqa: F811
    renders,
):
    operator, operator_page = await task_page_socket(flagged_task, "operator")
    viewer, viewer_page = await task_page_socket(flagged_task, "viewer")
    renders.clear()  # the relay is quiet: what it rendered so far was for the catch-ups
    await sync_to_async(snooze_a_flag_of)(flagged_task)
    acting, viewing = await frames_until_quiet(operator), await frames_until_quiet(viewer)
    assert len(acting) == len(viewing) == 1
    assert has_action_forms(acting[0]) and not has_action_forms(viewing[0])
    assert renders.count(operator_page) == renders.count(viewer_page) == 1
    await operator.disconnect()
    await viewer.disconnect()


async def test_a_frame_rendered_for_another_page_is_never_sent_as_it_is(flagged_task):  # noqa: F811
    viewer, viewer_page = await task_page_socket(flagged_task, "viewer")
    last = await sync_to_async(latest_change_id)()
    note = {"type": "change.note", "id": last + 1000, "kind": "flag.snoozed"}
    note |= {"tasks": [flagged_task.pk], "threads": [], "flag": None}
    forged = {"type": "change.frame", "first": note["id"], "last": note["id"]}
    forged |= {"page": ["task", flagged_task.pk, True], "html": "operator only", "notes": [note]}
    await get_channel_layer().group_send(groups.page(viewer_page), forged)
    frames = await frames_until_quiet(viewer)
    assert len(frames) == 1 and "operator only" not in frames[0]
    assert not has_action_forms(frames[0]) and cursor(frames[0]) == note["id"]
    await viewer.disconnect()


async def test_a_frame_partly_sent_by_a_resume_s_catch_up_is_rendered_for_the_rest(
    cookie,  # noqa: F811
    source,
):
    await sync_to_async(apply_events)(source, SEED000[:12])
    last = await sync_to_async(latest_change_id)()
    socket = await live_list_socket(cookie)  # caught up to `last`
    notes = [
        {"type": "change.note", "id": n, "kind": "task.updated", "tasks": [], "threads": []}
        | {"flag": None}
        for n in (last - 1, last, last + 1)
    ]
    overlapping = {"type": "change.frame", "first": last - 1, "last": last + 1}
    overlapping |= {"page": list(LIST), "html": "sent twice", "notes": notes}
    await get_channel_layer().group_send(groups.page(LIST), overlapping)
    frames = await frames_until_quiet(socket)
    assert len(frames) == 1 and "sent twice" not in frames[0]
    assert cursor(frames[0]) == last + 1
    await socket.disconnect()
