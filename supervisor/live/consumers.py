"""The live socket of every page: pushes each change as htmx out-of-band swaps.

A page connects to /ws/live/?view=VIEW&id=PK and sends {"resume": LAST_CHANGE_ID} on
every (re)connection; the consumer then sends each change after that id, one frame per
change, then live ones: nothing is missed and nothing is sent twice. Frames re-read the
state and render the same template partials the pages use.

Live frames come rendered from the relay (relay.py), one per batch of changes it read
at once and per Page (rendering.py); the consumer sends them on as they are when they
were rendered for its Page and hold nothing it sent already, and renders what is left
itself otherwise (after a role change, or where a resume's catch-up overlaps them).

The socket follows its session: it re-reads it when told through the user's group
(signals.py), and before a frame when its last read is older than session.RECHECK (5 s).
Once the session has ended the socket is closed with 4401 and sent nothing more; after
a role change its frames carry the action forms the new role allows.

Numbers from the client (query `id` and `after`, message `resume`) are ids: a decimal
integer in 0..2**63-1 (the database's bigint); anything else closes the socket with
4400, after the handshake for the query's (the origin and the session are refused at
the handshake itself). A message that is not a JSON object with `resume` is ignored.

Every KEEP_EVERY seconds a socket joins its groups again (a Redis restart empties them,
and channels_redis forgets a membership after a day) and, if the relay sent its page a
frame it never got (a channel over capacity drops frames), catches up from its cursor.

A socket closes only for a reason, with that reason's code, on either channel layer:
4401 the session ended, 4400 a bad id, message or path, 4403 a foreign origin
(origin.py), 4503 the channel layer was lost (layer.py). An idle one stays open.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from . import groups
from .layer import LAYER_ERRORS, LAYER_LOST
from .notes import notes_after
from .relay import relay, settled
from .rendering import MISSING, Page, cached_note, page_of, render_frame, render_note
from .session import session_digest, session_reads

log = logging.getLogger(__name__)

VIEWS = {"overview", "list", "task", "thread"}
RESUME_WAIT = 2.0  # seconds to wait for the page's resume message before going live
ID_MAX = 2**63 - 1  # the database's bigint
ID_DIGITS = re.compile(r"[0-9]{1,19}")
MESSAGE_MAX = 1024  # characters; the page sends {"resume": N}
SESSION_ENDED, BAD_REQUEST = 4401, 4400
KEEP_EVERY = 10.0  # seconds between a socket's re-joins and its check for a lost frame
KEEP_GRACE = 2.0  # seconds a frame may take from the relay to its socket


def query_id(value: str) -> int | None:
    """An id from the query string: ASCII digits only (int() also takes "+1", " 1",
    "1_0" and other scripts' digits), within the bigint."""
    if not ID_DIGITS.fullmatch(value):
        return None
    number = int(value)
    return number if number <= ID_MAX else None


def message_id(value) -> int | None:
    """An id from a JSON message: an integer (not a float, not a bool) within the bigint."""
    if type(value) is not int or not 0 <= value <= ID_MAX:
        return None
    return value


class LiveConsumer(AsyncWebsocketConsumer):
    ended = False  # the session ended: closed with 4401, nothing more is sent

    async def __call__(self, scope, receive, send):
        try:
            await super().__call__(scope, receive, send)
        except LAYER_ERRORS as exc:
            await self.layer_lost(exc)

    async def layer_lost(self, exc: BaseException) -> None:
        """The channel layer failed under this socket: close it with 4503, on which the page
        retries and resumes from its cursor (layer.py)."""
        if self.ended:
            return
        log.warning("live socket closed with %s: the channel layer failed (%s)", LAYER_LOST, exc)
        self.ended = True
        self._stop_keeping()
        # At once: the client may have gone meanwhile, and then there is nobody to tell.
        with contextlib.suppress(Exception):
            await self.close(code=LAYER_LOST)
        # Not through the layer, which would wait out its retries: channels_redis drops
        # a dead channel's messages and its group memberships expire by themselves.
        page, self.page, self.groups_joined = self.page, None, []
        if page is not None:
            relay.unwatch(page, self.channel_name)

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=SESSION_ENDED)
            return
        # Latin-1 maps every byte: a stray one is a bad id below, not a UnicodeDecodeError.
        # Blank values are kept: `id=` is no id, not the default one.
        raw = self.scope.get("query_string", b"").decode("latin-1")
        query = parse_qs(raw, keep_blank_values=True)
        self.view = (query.get("view") or ["list"])[0]
        self.subject = query_id((query.get("id") or ["0"])[0])
        given_after = query.get("after")
        after = query_id(given_after[0]) if given_after else None
        if self.view not in VIEWS or self.subject is None or (given_after and after is None):
            # Accepted first: closed during the handshake, the socket is an HTTP 403 to
            # the browser, which then sees no close code. Nothing is joined or sent, and
            # a message the client sent meanwhile is ignored.
            self.ended = True
            await self.accept()
            await self.close(code=BAD_REQUEST)
            return
        self.session_key = self.scope["session"].session_key
        self.can_act = await database_sync_to_async(user.has_perm)("core.act")
        self.session_read_at = time.monotonic()  # the middleware has just read it
        self.cursor: int | None = None
        self.live = False
        self.waiting: list[dict] = []
        self.page: Page | None = None
        await self._show(page_of(self.view, self.subject, self.can_act))
        self.groups_joined = [groups.user(user.pk)]
        await self.channel_layer.group_add(self.groups_joined[0], self.channel_name)
        await self.accept()
        relay.ensure_running()
        self._keeping = asyncio.ensure_future(self.keep())
        if after is not None:
            await self.resume(after)
        else:
            self._go_live_later = asyncio.get_running_loop().call_later(
                RESUME_WAIT, lambda: asyncio.ensure_future(self.go_live())
            )

    async def _show(self, page: Page) -> None:
        """Follow `page`'s frames. The new group is joined before the old one is left, and
        the old one is left only after a frame the relay already rendered for it, so that
        no frame falls between (one sent to both is dropped by the cursor)."""
        old, self.page = self.page, page
        if old == page:
            return
        relay.watch(page, self.channel_name)
        await self.channel_layer.group_add(groups.page(page), self.channel_name)
        if old is not None:
            await relay.leave(self.channel_layer, old, self.channel_name)

    async def disconnect(self, code):
        self._stop_keeping()
        await self._leave_groups()
        timer = getattr(self, "_go_live_later", None)
        if timer is not None:
            timer.cancel()

    def _stop_keeping(self) -> None:
        keeping = getattr(self, "_keeping", None)
        if keeping is not None and keeping is not asyncio.current_task():
            keeping.cancel()

    async def keep(self) -> None:
        """Rejoin the groups now and then, and catch up on a frame the relay sent this
        page that never came: a socket never stays open and deaf."""
        while not self.ended:
            await asyncio.sleep(KEEP_EVERY)
            if self.ended or self.page is None:
                return
            try:
                for group in [*self.groups_joined, groups.page(self.page)]:
                    await self.channel_layer.group_add(group, self.channel_name)
                if self.live and relay.missed(self.page, self.cursor or 0, KEEP_GRACE):
                    self.live = False  # frames wait while the catch-up runs
                    await self.resume(self.cursor or 0)
            except LAYER_ERRORS as exc:
                await self.layer_lost(exc)
                return
            except Exception as exc:  # the database away: the next round tries again
                log.warning("live socket: its catch-up failed (%s); trying again", exc)
                with contextlib.suppress(Exception):
                    await self.go_live()  # the frames that waited meanwhile, if it can

    async def _leave_groups(self) -> None:
        joined, self.groups_joined = getattr(self, "groups_joined", []), []
        page, self.page = getattr(self, "page", None), None
        if page is not None:
            relay.unwatch(page, self.channel_name)
            joined.append(groups.page(page))
        for group in joined:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data=None, bytes_data=None):
        if self.ended or text_data is None:
            return
        if len(text_data) > MESSAGE_MAX:
            await self.close(code=BAD_REQUEST)
            return
        try:
            message = json.loads(text_data)
        except ValueError:  # also a number past Python's digit limit
            return
        if not isinstance(message, dict) or "resume" not in message:
            return  # the page sends nothing else; ignore what is not a resume
        after = message_id(message["resume"])
        if after is None:
            await self.close(code=BAD_REQUEST)
            return
        timer = getattr(self, "_go_live_later", None)
        if timer is not None:
            timer.cancel()
        await self.resume(after)

    async def session_check(self, event: dict) -> None:
        """Sent to the user's group when the session may have ended or the role changed."""
        if self.ended:
            return
        if event.get("ended") and event["ended"] == session_digest(self.session_key):
            await self.end_session()  # this session logged out: nothing to read
            return
        await self.read_session(event.get("check"))

    async def read_session(self, check: str | None = None) -> bool:
        """Re-read what the session grants; False (and the socket closed) once it ended."""
        grant = await session_reads.grant(self.session_key, check)
        self.session_read_at = time.monotonic()
        if grant is None:
            await self.end_session()
            return False
        self.can_act = grant.can_act
        if self.page is not None:
            await self._show(page_of(self.view, self.subject, self.can_act))
        return True

    async def end_session(self) -> None:
        if self.ended:
            return
        self.ended = True
        self._stop_keeping()
        await self._leave_groups()
        await self.close(code=SESSION_ENDED)

    async def resume(self, after: int) -> None:
        """Send every change after `after` that concerns this page, then go live. Past
        what the relay has sent, only ids that follow one by one: a read of its own could
        pass an id not yet committed, which the relay's frames bring later, in order."""
        start = max(after, self.cursor or 0)
        ceiling = relay.last_id
        while not self.ended:
            read = await database_sync_to_async(notes_after)(start)
            notes = settled(read, start, ceiling)
            for note in notes:
                await self.push(note)
            if not notes:
                break
            start = notes[-1]["id"]
            if len(notes) < len(read):
                break
        self.cursor = max(self.cursor or 0, start)
        await self.go_live()

    async def go_live(self) -> None:
        self.live = True
        waiting, self.waiting = self.waiting, []
        for frame in waiting:
            await self.change_frame(frame)

    async def dispatch(self, message):
        # Channels closes stale database connections before every handler, a hop to a
        # thread each time; a frame touches no connection (what it reads goes through
        # database_sync_to_async, which closes them itself).
        if message["type"] == "change.frame":
            await self.change_frame(message)
        else:
            await super().dispatch(message)

    async def change_frame(self, frame: dict) -> None:
        """A frame from the relay: the changes `first`..`last` rendered for `page`."""
        if not self.live:
            self.waiting.append(frame)
            return
        if not await self._may_send(frame["last"]):
            return
        sent_up_to, self.cursor = self.cursor, frame["last"]
        fresh = sent_up_to is None or frame["first"] > sent_up_to
        if fresh and Page(*frame["page"]) == self.page:
            html = frame["html"]
        else:
            # Rendered for the page this socket showed before its role changed, or partly
            # sent by the catch-up after a resume: what is left, rendered for this page.
            notes = [n for n in frame["notes"] if sent_up_to is None or n["id"] > sent_up_to]
            html = await database_sync_to_async(render_frame)(notes, self.page)
        if html:
            await self.send(text_data=html)

    async def push(self, note: dict) -> None:
        """One change of a resume's catch-up."""
        if not await self._may_send(note["id"]):
            return
        self.cursor = note["id"]
        html = cached_note(note, self.page)  # on the event loop: a hop only on a miss
        if html is MISSING:
            html = await database_sync_to_async(render_note)(note, self.page)
        if html:
            await self.send(text_data=html)

    async def _may_send(self, last_id: int) -> bool:
        if self.ended:
            return False
        if self.cursor is not None and last_id <= self.cursor:
            return False  # already sent (a resume and the live stream overlap)
        # The safety net for a session changed where no message reaches this process.
        return (
            time.monotonic() - self.session_read_at < session_reads.recheck
            or await self.read_session()
        )


class NoSuchSocket(AsyncWebsocketConsumer):
    """Any other socket path (an id put in the path, say): a bad request, closed with 4400
    once open as a bad id is, instead of the router's "No route found" traceback; a
    stranger is refused with 4401 at the handshake, as on the live path."""

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=SESSION_ENDED)
            return
        await self.accept()
        await self.close(code=BAD_REQUEST)
