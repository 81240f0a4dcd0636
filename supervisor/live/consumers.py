"""The live socket of every page: pushes each change as htmx out-of-band swaps.

A page connects to /ws/live/?view=VIEW&id=PK and sends {"resume": LAST_CHANGE_ID} on
every (re)connection; the consumer then sends each change after that id, one frame per
change, then live ones: nothing is missed and nothing is sent twice. Frames re-read the
state and render the same template partials the pages use.
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from . import groups
from .notes import notes_after
from .relay import relay
from .rendering import render_note

VIEWS = {"overview", "list", "task", "thread"}
RESUME_WAIT = 2.0  # seconds to wait for the page's resume message before going live


class LiveConsumer(AsyncWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.view = (query.get("view") or ["list"])[0]
        try:
            self.subject = int((query.get("id") or ["0"])[0])
            after = query.get("after")
            after = int(after[0]) if after else None
        except ValueError:
            await self.close(code=4400)
            return
        if self.view not in VIEWS:
            await self.close(code=4400)
            return
        self.can_act = await database_sync_to_async(user.has_perm)("core.act")
        self.cursor: int | None = None
        self.live = False
        self.waiting: list[dict] = []
        self.groups_joined = [self._group()]
        for group in self.groups_joined:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        relay.ensure_running()
        if after is not None:
            await self.resume(after)
        else:
            self._go_live_later = asyncio.get_running_loop().call_later(
                RESUME_WAIT, lambda: asyncio.ensure_future(self.go_live())
            )

    def _group(self) -> str:
        if self.view == "task":
            return groups.task(self.subject)
        if self.view == "thread":
            return groups.thread(self.subject)
        return groups.EVERYTHING

    async def disconnect(self, code):
        for group in getattr(self, "groups_joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)
        timer = getattr(self, "_go_live_later", None)
        if timer is not None:
            timer.cancel()

    async def receive(self, text_data=None, bytes_data=None):
        try:
            message = json.loads(text_data or "{}")
            after = int(message["resume"])
        except (ValueError, KeyError, TypeError):
            return  # the page sends nothing else; ignore what is not a resume
        timer = getattr(self, "_go_live_later", None)
        if timer is not None:
            timer.cancel()
        await self.resume(after)

    async def resume(self, after: int) -> None:
        """Send every change after `after` that concerns this page, then go live."""
        start = max(after, self.cursor or 0)
        while True:
            notes = await database_sync_to_async(notes_after)(start)
            for note in notes:
                await self.push(note)
            if not notes:
                break
            start = notes[-1]["id"]
        self.cursor = max(self.cursor or 0, start)
        await self.go_live()

    async def go_live(self) -> None:
        self.live = True
        waiting, self.waiting = self.waiting, []
        for note in waiting:
            await self.change_note(note)

    async def change_note(self, note: dict) -> None:
        if not self.live:
            self.waiting.append(note)
            return
        await self.push(note)

    async def push(self, note: dict) -> None:
        if self.cursor is not None and note["id"] <= self.cursor:
            return  # already sent (a resume and the live stream overlap)
        self.cursor = note["id"]
        html = await database_sync_to_async(render_note)(
            note, self.view, self.subject, self.can_act
        )
        if html:
            await self.send(text_data=html)
