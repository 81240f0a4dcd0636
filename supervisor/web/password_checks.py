"""Password checks, the costly part of a log-in (PBKDF2: about 0.6 s of CPU), which
anyone can ask for: at most SUPERVISOR_PASSWORD_CHECKS of them at once in a web process,
and none holding a database connection.

Django's ModelBackend looks the user up and hashes the password with the connection of
that lookup still taken from the pool: it goes back only when the request ends. Forty
wrong-password log-ins held every pooled connection for the length of their hashes, and
ingest and the live relay, waiting for one, answered 503.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager

from django.conf import settings
from django.contrib.auth import check_password_with_timing_attack_mitigation, get_user_model
from django.contrib.auth.backends import ModelBackend
from django.db import connections
from django.views.decorators.debug import sensitive_variables

log = logging.getLogger(__name__)

RETRY_AFTER = 1  # seconds: a check takes about 0.6 s
WARN_EVERY = 60.0  # seconds between warnings while log-ins are refused

_lock = threading.Lock()
_slots: dict[int, threading.BoundedSemaphore] = {}
_last_warning = 0.0


@contextmanager
def slot():
    """True, and held until the block ends, when a password check may start now; False
    at once when SUPERVISOR_PASSWORD_CHECKS are already running in this process."""
    count = settings.SUPERVISOR_PASSWORD_CHECKS
    with _lock:
        semaphore = _slots.setdefault(count, threading.BoundedSemaphore(count))
    if not semaphore.acquire(blocking=False):
        _warn(count)
        yield False
        return
    try:
        yield True
    finally:
        semaphore.release()


def _warn(count: int) -> None:
    global _last_warning
    now = time.monotonic()
    if now - _last_warning >= WARN_EVERY:
        _last_warning = now
        log.warning(
            "log-ins refused (503): %d password checks already running "
            "(SUPERVISOR_PASSWORD_CHECKS)",
            count,
        )


class PasswordBackend(ModelBackend):
    """ModelBackend, but the lookup's connection goes back to the pool before the hash."""

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
            user = None  # the password is hashed all the same, so that it takes as long
        connection = connections[users._default_manager.db]
        if not connection.in_atomic_block:  # a transaction keeps its connection
            connection.close()  # pooled: handed back; the next query takes one again
        if check_password_with_timing_attack_mitigation(user, password):
            return user if self.user_can_authenticate(user) else None
        return None
