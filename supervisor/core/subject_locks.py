"""Locks at the grain of the subjects a write touches, not of their namespace.

Two evaluations of one namespace used to queue on its row for their whole write, and
ingest with them. On PostgreSQL a writer now takes one transaction-scoped advisory lock
per subject it writes, all in one statement and in one order (so two writers cannot
each hold what the other waits for); writers of different subjects never wait. SQLite
needs none: its IMMEDIATE transactions (settings.py) admit one writer at a time.

The multi-row UPDATEs that follow can still meet another writer's in the opposite
order; PostgreSQL then aborts one of them, and `retrying` runs that one again: each
writer's transaction is all or nothing, so a second attempt applies it once.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterable

from django.db import OperationalError, connection

log = logging.getLogger(__name__)

ATTEMPTS = 4
# SQLSTATE: deadlock_detected, serialization_failure.
RETRYABLE = {"40P01", "40001"}


def key(space: str, namespace_id: int | None, kind: str, subject_id: str) -> int:
    """A signed 64-bit advisory lock key; two subjects sharing one only wait on each other."""
    digest = hashlib.blake2b(
        f"{space}\x00{namespace_id}\x00{kind}\x00{subject_id}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock(space: str, namespace_id: int, subjects: Iterable[tuple[str, str]]) -> None:
    """Hold, until the transaction ends, the locks of `(kind, id)` subjects in `space`."""
    if connection.vendor != "postgresql":
        return
    keys = sorted({key(space, namespace_id, kind, subject_id) for kind, subject_id in subjects})
    if not keys:
        return
    with connection.cursor() as cursor:
        # Sorted before the locks are taken: PostgreSQL evaluates a volatile function in
        # the select list after ORDER BY.
        cursor.execute(
            "SELECT pg_advisory_xact_lock(k) FROM unnest(%s::bigint[]) AS k ORDER BY k", [keys]
        )


def retrying[T](write: Callable[[], T]) -> T:
    """Run a transaction (`write` opens and closes it) again when PostgreSQL aborted it
    as one side of a deadlock or a serialization failure."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return write()
        except OperationalError as exc:
            code = getattr(exc.__cause__, "sqlstate", None)
            if code not in RETRYABLE or attempt == ATTEMPTS:
                raise
            log.info("write aborted (%s), attempt %d of %d: retrying", code, attempt, ATTEMPTS)
            time.sleep(0.01 * attempt)
    raise AssertionError("unreachable")


def rows_in_order(model, key: str, namespace_id: int, ids) -> None:
    """Lock the existing rows of these subjects in order of their id (PostgreSQL). Every
    writer of task and thread rows (ingest, mark_committed, evaluation) locks threads,
    then tasks, this way before it updates them: none then waits for another in a circle.
    """
    if connection.vendor == "postgresql" and ids:
        list(
            model.objects.filter(namespace_id=namespace_id, **{f"{key}__in": list(ids)})
            .order_by(key)
            .select_for_update(no_key=True)
            .values_list("pk", flat=True)
        )
