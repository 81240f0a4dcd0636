"""Password checks, the costly part of a log-in (PBKDF2: about 0.6 s of CPU), which
anyone can ask for: at most SUPERVISOR_PASSWORD_CHECKS of them at once in a web process,
on threads of their own at the lowest CPU priority, and none holding a database
connection.

Django's ModelBackend looks the user up and hashes the password with the connection of
that lookup still taken from the pool: it goes back only when the request ends. Forty
wrong-password log-ins held every pooled connection for the length of their hashes, and
ingest and the live relay, waiting for one, answered 503. Bounded but at full priority,
the hashes still took a core from ingest (docs/benchmarks.md, "Log-ins beside ingest").
"""

from __future__ import annotations

import logging
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

RETRY_AFTER = 1  # seconds: a check takes about 0.6 s
WARN_EVERY = 60.0  # seconds between warnings while log-ins are refused
BUSY_PAGE = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
    "<title>Log in · Supervisor</title></head><body><h1>Log in</h1>"
    "<p role='alert'>Too many log-ins are being checked just now. "
    f"Try again in {RETRY_AFTER} second.</p><p><a href='/login/'>Log in</a></p></body></html>"
)


class _Checks:
    """The slots and the hashing threads of one SUPERVISOR_PASSWORD_CHECKS value."""

    def __init__(self, count: int):
        self.count = count
        self.slots = threading.BoundedSemaphore(count)
        self.threads = ThreadPoolExecutor(count, "password-check", initializer=_lowest_priority)


def _lowest_priority() -> None:
    # Linux: a thread's nice value is its own (setpriority on its thread id). Elsewhere
    # the hashes keep the process's priority; the bound still holds.
    with suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


_lock = threading.Lock()
_checks: dict[int, _Checks] = {}
_last_warning = 0.0


def _current() -> _Checks:
    count = settings.SUPERVISOR_PASSWORD_CHECKS
    with _lock:
        if count not in _checks:
            _checks[count] = _Checks(count)
        return _checks[count]


@contextmanager
def slot():
    """True, and held until the block ends, when a password check may start now; False
    at once when SUPERVISOR_PASSWORD_CHECKS are already under way in this process."""
    checks = _current()
    if not checks.slots.acquire(blocking=False):
        _warn(checks.count)
        yield False
        return
    try:
        yield True
    finally:
        checks.slots.release()


def _warn(count: int) -> None:
    global _last_warning
    now = time.monotonic()
    if now - _last_warning >= WARN_EVERY:
        _last_warning = now
        log.warning(
            "log-ins refused (503): %d password check(s) already under way "
            "(SUPERVISOR_PASSWORD_CHECKS)",
            count,
        )


def _hash(function, *args):
    """`function(*args)` on a hashing thread, the caller waiting (holding nothing)."""
    return _current().threads.submit(function, *args).result()


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
