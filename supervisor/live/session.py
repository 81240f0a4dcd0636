"""What a live socket's session grants now, so that an open socket follows its session.

The session is read again from the session store and its user loaded as Django loads
the user of a request (`django.contrib.auth.get_user`: the user must exist and be
active, and the session's auth hash must match, so a password change ends it), then
the user's `core.act` is asked afresh. None: the session has ended (logged out,
expired, deactivated, password changed).

Reads are shared per process: the sockets of one session (200 in the push benchmark)
ask at once and one read answers them all.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from importlib import import_module

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth import get_user

RECHECK = 5.0  # seconds: a socket pushing frames re-reads its session at most this often
KEPT = 4096  # sessions whose latest read a process keeps


@dataclass(frozen=True)
class Grant:
    user_pk: int
    can_act: bool


def session_digest(session_key: str) -> str:
    """How messages name a session without carrying its key (a bearer secret)."""
    return hashlib.sha256(session_key.encode()).hexdigest()[:32]


def read_grant(session_key: str) -> Grant | None:
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = get_user(_Request(_ReadOnly(store)))
    if not user.is_authenticated:
        return None
    return Grant(user.pk, user.has_perm("core.act"))


class _ReadOnly:
    """The session as get_user sees it, minus its writes: on a stale hash it would flush
    the session, or cycle its key (deleting the browser's) on a fallback secret; the
    socket leaves both to the browser's next HTTP request."""

    def __init__(self, store):
        self._store = store

    def __getitem__(self, key):
        return self._store[key]

    def get(self, key, default=None):
        return self._store.get(key, default)

    def __setitem__(self, key, value):
        pass

    def flush(self):
        pass

    def cycle_key(self):
        pass


@dataclass
class _Request:
    session: _ReadOnly


@dataclass
class _Read:
    started: float
    future: asyncio.Future
    checks: tuple[str, ...]  # the check messages it answers (the latest few)

    def usable(self) -> bool:
        if self.future.get_loop() is not asyncio.get_running_loop():
            return False  # another event loop's (a test's): it may never finish here
        if not self.future.done():
            return True
        return not self.future.cancelled() and self.future.exception() is None


class SessionReads:
    """The latest read of each session in this process, shared by its sockets."""

    recheck = RECHECK

    def __init__(self):
        self._reads: OrderedDict[str, _Read] = OrderedDict()

    async def grant(self, session_key: str, check: str | None = None) -> Grant | None:
        """The session's grant: read after the `check` message arrived (once for all the
        sockets it reached), or, without one, read at most `recheck` seconds ago."""
        read = self._reads.get(session_key)
        if read is None or not read.usable():
            read = self._start(session_key, (), check)
        elif check is not None and check not in read.checks:
            # A read that starts now also answers the checks the previous one did.
            read = self._start(session_key, read.checks, check)
        elif check is None and time.monotonic() - read.started >= self.recheck:
            read = self._start(session_key, read.checks, check)
        return await asyncio.shield(read.future)

    def _start(self, session_key: str, answered: tuple[str, ...], check: str | None) -> _Read:
        future = asyncio.ensure_future(database_sync_to_async(read_grant)(session_key))
        checks = (*answered, check)[-16:] if check else answered
        read = self._reads[session_key] = _Read(time.monotonic(), future, checks)
        self._reads.move_to_end(session_key)
        while len(self._reads) > KEPT:
            self._reads.popitem(last=False)
        return read


session_reads = SessionReads()
