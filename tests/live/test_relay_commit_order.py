"""On PostgreSQL two transactions may commit their changes out of id order: change N
still uncommitted while N+1 is committed and read. The relay then sent N+1 and never N
(its cursor was past it), and every open page missed that change (the live soak found
one in half an hour). It now sends a change only once every id below it is committed or
can never be (its transaction ended without it)."""

import threading

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection, transaction

from supervisor.asgi import application
from supervisor.core import changes
from supervisor.core.changes import ChangeKind, Subject
from supervisor.live.relay import GAP_SETTLE, Gap
from tests.support.cast import make_user
from tests.support.live import ORIGIN, frames_until_quiet, live_list_socket, logged_in

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.asyncio,
    pytest.mark.services,  # commits out of id order need PostgreSQL
]

FROM_TO = r'id="live-cursor" data-change="(\d+)" data-from="(\d+)"'


def record_in_a_transaction_held_until(release: threading.Event, rollback: bool) -> tuple:
    """A change recorded in a transaction that stays open until `release` is set."""
    holding, done, made = threading.Event(), threading.Event(), []

    def run():
        try:
            with transaction.atomic():
                for name in ("slow-1", "slow-2", "slow-3"):  # a gap of several ids
                    made.append(changes.record(ChangeKind.USER_CREATED, Subject("user", name)).id)
                holding.set()
                release.wait(30)
                if rollback:
                    transaction.set_rollback(True)
        finally:
            connection.close()
            done.set()

    threading.Thread(target=run, daemon=True).start()
    assert holding.wait(10)
    return made, done


def covered(frames: list[str]) -> set[int]:
    import re

    ids = set()
    for frame in frames:
        for last, first in re.findall(FROM_TO, frame):
            ids |= set(range(int(first), int(last) + 1))
    return ids


@pytest.mark.parametrize("rollback", [False, True], ids=["committed", "rolled back"])
async def test_a_change_committed_after_a_later_one_still_reaches_the_page(rollback):
    assert connection.vendor == "postgresql"
    user = await sync_to_async(make_user)("ws-order", "viewer")
    _, cookie = await sync_to_async(logged_in)(user)
    communicator = await live_list_socket(cookie)

    release = threading.Event()
    made, done = await sync_to_async(record_in_a_transaction_held_until, thread_sensitive=False)(
        release, rollback
    )
    later = await sync_to_async(changes.record)(ChangeKind.USER_CREATED, Subject("user", "fast"))
    assert later.id > made[0]
    early = await frames_until_quiet(communicator, timeout=1.5)
    release.set()
    assert await sync_to_async(done.wait)(10)
    late = await frames_until_quiet(communicator, timeout=3)

    seen = covered(early + late)
    assert later.id in seen, "the later change reached the page"
    if not rollback:
        assert set(made) <= seen, "the changes committed last reached the page too"
        # In id order: nothing past the open transaction's change was sent before it.
        assert later.id not in covered(early)
    await communicator.disconnect()


async def test_a_socket_that_resumes_past_an_uncommitted_change_still_gets_it():
    """A resume's catch-up reads the log itself: it goes only as far as the relay, whose
    frames then bring the change committed last and the one after it, in order."""
    user = await sync_to_async(make_user)("ws-order-resume", "viewer")
    _, cookie = await sync_to_async(logged_in)(user)
    first = await live_list_socket(cookie)  # the relay runs and follows the log
    release = threading.Event()
    made, done = await sync_to_async(record_in_a_transaction_held_until, thread_sensitive=False)(
        release, False
    )
    later = await sync_to_async(changes.record)(ChangeKind.USER_CREATED, Subject("user", "fast"))
    await frames_until_quiet(first, timeout=1.0)

    communicator = WebsocketCommunicator(application, "/ws/live/?view=list", [ORIGIN, cookie])
    assert (await communicator.connect())[0]
    await communicator.send_json_to({"resume": made[0] - 1})
    early = await frames_until_quiet(communicator, timeout=1.0)
    release.set()
    assert await sync_to_async(done.wait)(10)
    late = await frames_until_quiet(communicator, timeout=3)
    assert {made[0], later.id} <= covered(early + late)
    await communicator.disconnect()
    await first.disconnect()


def burn_ids_in_a_rolled_back_transaction(count: int) -> tuple[int, int]:
    """Change ids `count` records took and gave back: a big import that failed."""
    with transaction.atomic():
        first = changes.record(ChangeKind.USER_CREATED, Subject("user", "burnt-0")).id
        for n in range(1, count):
            last = changes.record(ChangeKind.USER_CREATED, Subject("user", f"burnt-{n}")).id
        transaction.set_rollback(True)
    return first, last


async def test_a_gap_of_thousands_of_rolled_back_ids_holds_the_page_back_only_briefly():
    """A failed import burns thousands of change ids at once. The relay asked about 500 of
    them per round, each with its own insert and each round after its own settling wait:
    5,000 ids held every page back for seconds (CI saw a page get nothing at all)."""
    user = await sync_to_async(make_user)("ws-burnt", "viewer")
    _, cookie = await sync_to_async(logged_in)(user)
    communicator = await live_list_socket(cookie)
    first, last = await sync_to_async(burn_ids_in_a_rolled_back_transaction)(5000)
    assert last - first == 4999
    after = await sync_to_async(changes.record)(ChangeKind.USER_CREATED, Subject("user", "after"))
    frames = await frames_until_quiet(communicator, timeout=1.5)
    assert after.id in covered(frames)
    await communicator.disconnect()


@pytest.mark.parametrize("writer", [False, True], ids=["alone", "beside a writer at work"])
async def test_a_gap_of_rolled_back_ids_is_passed_in_one_round(writer):
    """Alone, the locks say nobody can still commit an id of the gap; beside a writer at
    work (on ids past the gap), one insert asks about 5,000 ids at once."""
    release = threading.Event()

    def passed() -> bool:
        first, last = burn_ids_in_a_rolled_back_transaction(5000)
        if writer:
            made, _ = record_in_a_transaction_held_until(release, rollback=True)
            assert made[0] > last
        gap = Gap(first, last)
        gap.seen -= GAP_SETTLE
        return gap.never_coming() == last

    try:
        assert await sync_to_async(passed)()
    finally:
        release.set()
