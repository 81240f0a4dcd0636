"""Password checks, the costly part of a log-in (PBKDF2: about 0.6 s of CPU), which
anyone can ask for: at most SUPERVISOR_PASSWORD_CHECKS of them at once in a web process,
on threads of their own at the lowest CPU priority, and none holding a database
connection.

Django's ModelBackend looks the user up and hashes the password with the connection of
that lookup still taken from the pool: it goes back only when the request ends. Forty
wrong-password log-ins held every pooled connection for the length of their hashes, and
ingest and the live relay, waiting for one, answered 503. Bounded but at full priority,
the hashes still took a core from ingest (docs/benchmarks.md, "Log-ins beside ingest").

A log-in refused because every check is taken is refused by `BusyGate`, in front of
Django: answered through the middleware and a view's thread, the refusals of forty
clients cost ingest half its speed again.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.hashers import make_password, verify_password
from django.core.exceptions import PermissionDenied
from django.db import connections
from django.views.decorators.debug import sensitive_variables

log = logging.getLogger(__name__)

RETRY_AFTER = 1  # seconds, while a check is under way: a check takes about 0.6 s
BURST = 2.0  # seconds of checks that may run back to back: about three log-ins
WARN_EVERY = 60.0  # seconds between warnings while log-ins are refused


def busy_page(seconds: int) -> bytes:
    """The refusal's page: static, nothing rendered or looked up."""
    unit = "second" if seconds == 1 else "seconds"
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<title>Log in · Supervisor</title></head><body><h1>Log in</h1>"
        "<p role='alert'>Too many log-ins are being checked just now. "
        f"Try again in {seconds} {unit}.</p><p><a href='/login/'>Log in</a></p></body></html>"
    ).encode()


class _Checks:
    """The slots and the hashing threads of one SUPERVISOR_PASSWORD_CHECKS value."""

    def __init__(self, count: int):
        self.count = count
        self.slots = threading.BoundedSemaphore(count)
        self.threads = ThreadPoolExecutor(count, "password-check", initializer=_lowest_priority)
        self.under_way = 0  # read by BusyGate without a lock: a stale read is only early
        # Seconds of checks that may start now: spent by each check as long as it took,
        # earned back at SUPERVISOR_PASSWORD_CHECK_SHARE a second, at most BURST. So a
        # few log-ins at once pass, and a flood's checks take that share of a core.
        self.budget = BURST
        self.counted_at = _clock()

    def earned(self, now: float) -> float:
        """The budget at `now` (monotonic), with what was earned since last counted."""
        share = settings.SUPERVISOR_PASSWORD_CHECK_SHARE
        return min(BURST, self.budget + (now - self.counted_at) * share)


def _lowest_priority() -> None:
    # Linux: a thread's policy and nice value are its own (set on its thread id).
    # SCHED_IDLE, not only nice 19: the scheduler counts a core running nothing but idle
    # work as free, so ingest's threads are woken there at once. Elsewhere the hashes
    # keep the process's priority; the bound still holds.
    thread = threading.get_native_id()
    with suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, thread, 19)
    with suppress(OSError, AttributeError):
        os.sched_setscheduler(thread, os.SCHED_IDLE, os.sched_param(0))


_lock = threading.Lock()
_checks: dict[int, _Checks] = {}
_last_warning = 0.0
_clock = time.monotonic  # the budget's clock (a test sets its own)
_cpu_clock = time.thread_time  # a check's cost: its hashing thread's CPU (likewise)
_spent = threading.local()  # on a log-in's thread: the CPU its checks took


def _current() -> _Checks:
    count = settings.SUPERVISOR_PASSWORD_CHECKS
    with _lock:
        if count not in _checks:
            _checks[count] = _Checks(count)
        return _checks[count]


@contextmanager
def slot():
    """True, and held until the block ends, when a password check may start now; False
    at once when SUPERVISOR_PASSWORD_CHECKS are already under way in this process, or
    while the checks rest so as to keep to their share of a core."""
    checks = _current()
    if checks.earned(_clock()) <= 0 or not checks.slots.acquire(blocking=False):
        _warn(checks.count)
        yield False
        return
    with _lock:
        checks.under_way += 1
    _spent.seconds = 0.0
    try:
        yield True
    finally:
        # Idle priority alone is not enough: on a virtual machine a core's sibling
        # slows ingest whatever the hash's priority (forty log-ins made its p50 1.3
        # times its figure alone). So the checks keep to a share of a core over time,
        # counted in the CPU they took: at idle priority on a busy machine a check may
        # wait seconds for a core, which costs no one anything (counted as it was, a
        # busy machine refused log-ins it had room for).
        ended = _clock()
        with _lock:
            checks.under_way -= 1
            checks.budget, checks.counted_at = checks.earned(ended) - _spent.seconds, ended
        checks.slots.release()


def all_taken() -> bool:
    """Whether a password check could not start in this process just now."""
    checks = _current()
    return checks.under_way >= checks.count or checks.earned(_clock()) <= 0


def retry_after() -> int:
    """Seconds until a check may start: the time to earn back what the checks owe, or
    RETRY_AFTER while one is under way. Clients that wait it out ask no sooner than
    they could be answered (forty of them, each asking every second, cost ingest)."""
    owed = -_current().earned(_clock())
    if owed <= 0:
        return RETRY_AFTER
    return max(RETRY_AFTER, math.ceil(owed / settings.SUPERVISOR_PASSWORD_CHECK_SHARE))


def _warn(count: int) -> None:
    global _last_warning
    now = time.monotonic()
    if now - _last_warning >= WARN_EVERY:
        _last_warning = now
        log.warning(
            "log-ins refused (503): %d password check(s) already under way, or the "
            "checks past their share of a core "
            "(SUPERVISOR_PASSWORD_CHECKS, SUPERVISOR_PASSWORD_CHECK_SHARE)",
            count,
        )


def _timed(function, *args):
    started = _cpu_clock()
    return function(*args), _cpu_clock() - started


def _hash(function, *args):
    """`function(*args)` on a hashing thread, the caller waiting (holding nothing); its
    CPU counted against the caller's slot."""
    result, seconds = _current().threads.submit(_timed, function, *args).result()
    _spent.seconds = getattr(_spent, "seconds", 0.0) + seconds
    return result


class PasswordBackend(ModelBackend):
    """ModelBackend, but the lookup's connection goes back to the pool before the
    password is hashed, and the hash runs on a hashing thread.

    It decides every log-in it is given a name and password for: a wrong one raises
    PermissionDenied, which ends Django's `authenticate` (a failure all the same), so
    ModelBackend, listed after it for the sessions that name it, never checks a
    password with a connection held."""

    @sensitive_variables("password")
    def authenticate(self, request, username=None, password=None, **kwargs):
        users = get_user_model()
        if username is None:
            username = kwargs.get(users.USERNAME_FIELD)
        if username is None or password is None:
            return None
        try:
            user = users._default_manager.get_by_natural_key(username)
        except users.DoesNotExist:
            user = None
        connection = connections[users._default_manager.db]
        if not connection.in_atomic_block:  # a transaction keeps its connection
            connection.close()  # pooled: handed back; the next query takes one again
        if user is None:  # hashed all the same: as long as a check, it tells no one apart
            _hash(make_password, password)
            raise PermissionDenied
        right, must_update = _hash(verify_password, password, user.password)
        if right and must_update:  # a stronger hasher now: as user.check_password does
            user.set_password(password)
            user.save(update_fields=["password"])
        if right and self.user_can_authenticate(user):
            return user
        raise PermissionDenied


class BusyGate:
    """ASGI: a log-in (a POST to the log-in page) that could not start a password check
    now (`all_taken`) is answered 503 with Retry-After here, before Django: no
    middleware, no thread, no cache or database. One that slips past it (a check ended
    and another began meanwhile) meets the same refusal in the view."""

    HEADERS = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"same-origin"),
        (
            b"content-security-policy",
            b"default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
        ),
    ]

    def __init__(self, app):
        self.app = app
        self.login_path: str | None = None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST" and all_taken():
            if self.login_path is None:
                from django.urls import reverse

                self.login_path = reverse("login")
            if scope["path"] == self.login_path:
                _warn(settings.SUPERVISOR_PASSWORD_CHECKS)
                seconds = retry_after()
                headers = [*self.HEADERS, (b"retry-after", str(seconds).encode())]
                await send({"type": "http.response.start", "status": 503, "headers": headers})
                await send({"type": "http.response.body", "body": busy_page(seconds)})
                return
        await self.app(scope, receive, send)
