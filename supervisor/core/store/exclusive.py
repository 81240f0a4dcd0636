"""At most one running copy of a periodic job across every worker, without waiting.

Beat sends the sweep every interval whatever the last one is doing; with two worker
processes, a sweep that outlasted its interval was joined by the next, both judging the
same subjects. A copy that finds another running now skips its turn.

PostgreSQL: a session advisory lock, released by the job or with its connection when
the process dies. SQLite (one machine): a lock on a file in the var folder, released
with the file's descriptor, so also when the process dies.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import DatabaseError, connection

from supervisor.core.store.entity_locks import JOB_CLASS, entity_key


@contextmanager
def only_one(name: str) -> Iterator[bool]:
    """True inside when this is the only running copy of `name`; False: one is running."""
    if connection.vendor == "postgresql":
        lock_key = entity_key(0, "job", name)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [JOB_CLASS, lock_key])
            alone = cursor.fetchone()[0]
        try:
            yield alone
        finally:
            if alone:
                try:
                    with connection.cursor() as cursor:
                        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [JOB_CLASS, lock_key])
                except DatabaseError:
                    pass  # the connection is gone, and the lock with it
        return
    with open(settings.VAR_DIR / f"{name}.lock", "a") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
