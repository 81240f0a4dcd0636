"""One relay per ASGI process: follows the change log and sends its sockets the frames.

Whatever it reads at once (everything committed since its last read: an evaluation's
changes, an ingest's) becomes one frame per Page open in this process, rendered once
(rendering.render_frame) and sent with its notes to that Page's group, which only this
process's sockets of that Page join (groups.page). The consumers only send it on.

PostgreSQL wakes it with LISTEN/NOTIFY (a trigger notifies on every insert into the
change log); SQLite is polled. Either way it also polls slowly, so a missed wake-up
costs at most a second.

It sends changes in id order with none left out. On PostgreSQL two transactions may
commit out of id order: change N still uncommitted when N+1 is read. The relay then
holds N+1 back until N is committed, or known never to come (its writer rolled back).
SQLite has one writer at a time, so its ids commit in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import IntegrityError, OperationalError, connection, transaction

from . import groups
from .notes import latest_change_id, notes_after
from .rendering import Page, render_frame

log = logging.getLogger(__name__)

CHANNEL = "supervisor_changes"
POLL_SQLITE = 0.1  # seconds
POLL_SAFETY = 1.0
# A gap is asked about this long after it was seen (its writer has long written its
# rows by then), and passed over after GAP_MAX whatever the answer. Its ids are asked
# about GAP_IDS at a time with one insert (a failed import burns thousands at once), and
# one by one, at most GAP_ONE_BY_ONE, where some are committed or still held.
GAP_SETTLE, GAP_MAX, GAP_IDS, GAP_ONE_BY_ONE = 0.2, 30.0, 10_000, 500
GAP_POLL = 0.05  # seconds between reads while a gap is open
BACKOFF, BACKOFF_MAX = 0.5, 8.0  # seconds between tries while the database or layer is down


def render_frames(notes: list[dict], pages: list[Page]) -> dict[Page, str]:
    """The frame of these notes for each of the pages they concern."""
    frames = {}
    for page in pages:
        html = render_frame(notes, page)
        if html is not None:
            frames[page] = html
    return frames


class ChangeRelay:
    def __init__(self):
        self._task: asyncio.Task | None = None
        self.last_id: int | None = None
        self._watchers: dict[Page, set[str]] = {}  # the channels of this process's sockets
        self._sending: set[Page] = set()  # the pages of the batch being rendered and sent
        self._leaving: list[tuple[Page, str]] = []  # left during that batch: its frame first
        self._sent: dict[Page, tuple[int, float]] = {}  # each page's last frame, and when
        self._gap: Gap | None = None  # the first id not yet committed, on PostgreSQL

    def missed(self, page: Page, cursor: int, grace: float) -> bool:
        """Whether a frame sent to `page` over `grace` seconds ago is past `cursor`: its
        socket lost it (a channel over capacity, a Redis restart that emptied the groups)."""
        last, at = self._sent.get(page, (0, 0.0))
        return last > cursor and time.monotonic() - at > grace

    def watch(self, page: Page, channel: str) -> None:
        self._watchers.setdefault(page, set()).add(channel)

    def unwatch(self, page: Page, channel: str) -> None:
        channels = self._watchers.get(page)
        if channels is not None:
            channels.discard(channel)
            if not channels:
                del self._watchers[page]
                self._sent.pop(page, None)

    async def leave(self, layer, page: Page, channel: str) -> None:
        """`channel` no longer shows `page`. A batch already rendered for `page` still goes
        to its group, so the channel stays in it until that frame is sent: otherwise a
        socket moving to another page (a role change) would miss that batch's changes."""
        self.unwatch(page, channel)
        if page in self._sending:
            self._leaving.append((page, channel))
        else:
            await layer.group_discard(groups.page(page), channel)

    def pages(self) -> list[Page]:
        return list(self._watchers)

    def ensure_running(self) -> None:
        """Start the relay in the running event loop unless it already runs there."""
        loop = asyncio.get_running_loop()
        if self._task is not None and self._task.get_loop() is not loop:
            # A new loop (a server started again in this process, or the next test): the
            # cursor of the last one is stale, and a gap up to now would hold pages back.
            self.last_id, self._gap, self._task = None, None, None
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run(), name="supervisor-change-relay")

    async def _run(self) -> None:
        # Logged so that a relay that died and was started again shows (once per process).
        log.info("change relay: started")
        layer = get_channel_layer()
        waker: _Waker | None = None
        failures = 0
        try:
            while True:
                try:
                    if self.last_id is None:
                        self.last_id = await database_sync_to_async(latest_change_id)()
                    if waker is None:
                        waker = await _Waker.open()
                    read_after = self.last_id
                    notes = await database_sync_to_async(notes_after)(read_after)
                    notes = await self._in_commit_order(notes)
                    if notes:
                        await self._send(layer, notes)
                        self.last_id = notes[-1]["id"]
                    elif self.last_id != read_after:
                        pass  # a gap was passed: what follows it was read already, send it now
                    elif self._gap is not None:
                        # A rolled-back writer notifies nobody: look again soon.
                        await asyncio.sleep(GAP_POLL)
                    else:
                        await waker.wait()
                    if failures:
                        log.warning("change relay: working again after %d failure(s)", failures)
                        failures = 0
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # database or channel layer down: wait, go on
                    failures += 1
                    if failures == 1:
                        log.warning("change relay: %s; retrying with backoff", _reason(exc))
                    if waker is not None:  # its LISTEN connection may be the broken part
                        await waker.close()
                        waker = None
                    await asyncio.sleep(min(BACKOFF_MAX, BACKOFF * 2 ** (failures - 1)))
        finally:
            if waker is not None:
                await waker.close()

    async def _in_commit_order(self, notes: list[dict]) -> list[dict]:
        """The notes that may go now: those before the first id not yet committed, or
        past it once its writer ended without it."""
        if not notes or connection.vendor != "postgresql":
            return notes
        ready = in_order(notes, self.last_id)
        if ready:
            return ready  # the gap, if any, is looked at with the next read
        first, last = self.last_id + 1, notes[0]["id"] - 1
        if self._gap is None or self._gap.first != first:
            self._gap = Gap(first, last)
            return []
        gap = self._gap
        never = await database_sync_to_async(gap.never_coming)()
        if never is not None:  # those ids will never be committed: go on past them
            self.last_id, self._gap = never, None
            if never < gap.last:  # the rest of the gap, seen as long ago
                self._gap = Gap(never + 1, gap.last, seen=gap.seen)
        return []  # the next read goes on from there

    async def _render(self, notes: list[dict], pages: list[Page]) -> dict[Page, str]:
        return await database_sync_to_async(render_frames)(notes, pages)

    async def _send(self, layer, notes: list[dict]) -> None:
        pages = self.pages()
        self._sending = set(pages)
        try:
            await self._send_frames(layer, notes, pages)
        finally:
            self._sending = set()
            leaving, self._leaving = self._leaving, []
            for page, channel in leaving:
                if channel not in self._watchers.get(page, ()):  # not back on that page
                    await layer.group_discard(groups.page(page), channel)

    async def _send_frames(self, layer, notes: list[dict], pages: list[Page]) -> None:
        frames = await self._render(notes, pages)
        for page, html in frames.items():
            await layer.group_send(
                groups.page(page),
                {
                    "type": "change.frame",
                    "first": notes[0]["id"],
                    "last": notes[-1]["id"],
                    "page": list(page),
                    "html": html,
                    "notes": notes,
                },
            )
            self._sent[page] = (notes[-1]["id"], time.monotonic())


def in_order(notes: list[dict], after: int) -> list[dict]:
    """The notes whose ids follow `after` one by one, up to the first missing id."""
    ready = []
    for note in notes:
        if note["id"] != after + 1 + len(ready):
            break
        ready.append(note)
    return ready


def settled(notes: list[dict], after: int, relayed: int | None) -> list[dict]:
    """The notes a socket's catch-up may send now: those up to `relayed` (the relay's
    cursor: what it passed is final), then those that follow one by one."""
    if relayed is None:
        return notes
    passed = [note for note in notes if note["id"] <= relayed]
    return passed + in_order(notes[len(passed) :], max(after, relayed))


class Gap:
    """Change ids not committed while a later one is (PostgreSQL), asked about only
    GAP_SETTLE after the gap was seen.

    Every id of it was handed out before the later change's, so once no other session
    has the log open for writing, each is in the log or never will be: one look at the
    locks, then one at the log. Otherwise each is asked about by inserting a row with
    that id and rolling it back: the insert waits on a writer still open (the unique
    index does), fails on a committed row, and goes through when the id was rolled
    back. Other transactions, however long, do not matter."""

    class Free(Exception):
        """The probe's rows went in: nobody holds those ids."""

    def __init__(self, first: int, last: int, seen: float | None = None):
        self.first, self.last = first, last
        self.seen = time.monotonic() if seen is None else seen

    def never_coming(self) -> int | None:
        """The last of the gap's first ids known never to come, or None."""
        waited = time.monotonic() - self.seen
        if waited < GAP_SETTLE:
            return None
        if not _writers_open():
            taken = _first_in_log(self.first, self.last)  # committed since it was read
            return self.last if taken is None else (taken - 1 if taken > self.first else None)
        upto = min(self.last, self.first + GAP_IDS - 1)
        if _probe(self.first, upto) == "rolled back":
            return upto  # the usual answer: every id of it was given back
        never = None
        for change_id in range(self.first, min(upto, self.first + GAP_ONE_BY_ONE - 1) + 1):
            state = _probe(change_id, change_id)
            if state == "open" and waited >= GAP_MAX:
                log.warning(
                    "change relay: change %d still not committed after %.0f s; going on without it",
                    change_id,
                    waited,
                )
            elif state != "rolled back":
                break  # committed (the next read has it) or its writer is still at work
            never = change_id
        return never


def _writers_open() -> bool:
    """Whether another session holds the change log open for writing (an insert takes
    that lock before it takes an id, and keeps it until its transaction ends). A
    prepared transaction has no pid, so IS DISTINCT FROM."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'relation' "
            "AND relation = 'core_change'::regclass AND mode = 'RowExclusiveLock' "
            "AND pid IS DISTINCT FROM pg_backend_pid())"
        )
        return cursor.fetchone()[0]


def _first_in_log(first: int, last: int) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT min(id) FROM core_change WHERE id BETWEEN %s AND %s", [first, last])
        return cursor.fetchone()[0]


def _probe(first: int, last: int) -> str:
    """ "rolled back" when every id from `first` to `last` is free, "committed" when one
    is taken, "open" when one is held by a writer still at work."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '100ms'")
            cursor.execute(
                "INSERT INTO core_change (id, at, kind, subject_type, subject_id, payload) "
                "SELECT id, now(), 'relay.probe', '', '', '{}' FROM generate_series(%s, %s) id",
                [first, last],
            )
            raise Gap.Free  # rolls the probe back
    except Gap.Free:
        return "rolled back"
    except IntegrityError:
        return "committed"
    except OperationalError as exc:
        if getattr(getattr(exc, "__cause__", None), "sqlstate", None) == "55P03":
            return "open"  # lock_not_available: its writer is still at work
        raise


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class _Waker:
    """Waits for news: NOTIFY on PostgreSQL, a short sleep on SQLite."""

    def __init__(self, conn=None):
        self.conn = conn

    @classmethod
    async def open(cls) -> _Waker:
        if connection.vendor != "postgresql":
            return cls()
        import psycopg

        params = connection.get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        params.pop("prepare_threshold", None)
        params.pop("pool", None)
        try:
            conn = await psycopg.AsyncConnection.connect(autocommit=True, **params)
            await conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.OperationalError:
            raise  # the database is down: the relay tries again
        except Exception:
            log.exception("change relay: LISTEN failed; polling instead")
            return cls()
        return cls(conn)

    async def wait(self) -> None:
        if self.conn is None:
            await asyncio.sleep(POLL_SQLITE)
            return
        async for _ in self.conn.notifies(timeout=POLL_SAFETY, stop_after=1):
            break

    async def close(self) -> None:
        if self.conn is not None:
            # A broken connection is closed all the same.
            with contextlib.suppress(Exception):
                await self.conn.close()
            self.conn = None


relay = ChangeRelay()
