"""Concurrency control for ingest at the grain of the entities a batch writes.

A batch reads the rows it names, merges its events into them and writes them back:
two batches naming one entity must not interleave there, or one loses the other's
description. Batches that name disjoint entities need not wait for each other, even in
one namespace. On PostgreSQL each batch takes a transaction-scoped advisory lock per
entity it names, all in one statement and in one global order (so two batches never
deadlock on them), before it reads anything. SQLite needs none: its IMMEDIATE
transactions let one writer in at a time.

Every event names at least one entity, so two batches carrying the same event also
wait for each other there, which keeps the duplicate check ("first one wins") exact.

The keys use the two-integer form of the advisory locks, with their own class ids, so
they cannot meet any other advisory lock by accident. A batch naming more entities
than `MOST_KEYS` takes its whole namespace instead (the lock table is shared memory of
a bounded size); every batch holds its namespace's lock in shared mode otherwise.
"""

from __future__ import annotations

import hashlib
import logging
import random
import time
from collections.abc import Callable, Iterable

from django.db import OperationalError, connection

from supervisor.core.models import Namespace
from supervisor.core.store import any_of  # noqa: F401  (registers the lookup)

log = logging.getLogger(__name__)

ENTITY_CLASS = 0x1C0E  # "ingest, one entity"
NAMESPACE_CLASS = 0x1C0F  # "ingest, a whole namespace"
SUBJECT_CLASS = 0x1C10  # "evaluation, one subject"
JUDGING_CLASS = 0x1C11  # "evaluation, a whole namespace"
JOB_CLASS = 0x1C12  # "one running copy of a job" (exclusive.py)
MOST_KEYS = 500
# Deadlock detected, serialization failure: the transaction was rolled back whole.
RETRYABLE = {"40P01", "40001"}
ATTEMPTS = 5


def entity_key(namespace_id: int, kind: str, entity_id: str) -> int:
    """A signed 32-bit key for (namespace, kind, id); a collision only makes two
    batches wait for each other needlessly."""
    digest = hashlib.blake2b(
        f"{namespace_id}\x1f{kind}\x1f{entity_id}".encode(), digest_size=4
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_entities(namespace_id: int, entities: Iterable[tuple[str, str]]) -> None:
    """Wait for, then hold until the transaction ends, the entities `(kind, id)`."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        # Shared with every other batch: it waits only for a writer that takes the whole
        # namespace row (none does since issue 21; evaluations did). A batch would take
        # this lock at its commit anyway (its new rows' foreign key to the namespace),
        # holding its rows meanwhile: taken first, it cannot close a circle there.
        cursor.execute(
            f"SELECT 1 FROM {connection.ops.quote_name(Namespace._meta.db_table)} "
            "WHERE id = %s FOR KEY SHARE",
            [namespace_id],
        )
    keys = {entity_key(namespace_id, kind, entity_id) for kind, entity_id in entities}
    _lock_keys(NAMESPACE_CLASS, ENTITY_CLASS, namespace_id, keys)


def lock_subjects(namespace_id: int, subjects: Iterable[tuple[str, str]]) -> None:
    """Evaluation's locks, held until the transaction ends: one per judged `(kind, id)`
    subject, so that two evaluations of one subject write one after the other (and
    never over a newer one) while evaluations of different subjects go side by side.
    An evaluation judging more than `MOST_KEYS` subjects takes its namespace's
    evaluation lock instead. Apart from ingest's: a batch and an evaluation meet only
    on the rows they both write, which both lock in one order (`lock_in_order`)."""
    if connection.vendor != "postgresql":
        return
    keys = {entity_key(namespace_id, kind, subject_id) for kind, subject_id in subjects}
    _lock_keys(JUDGING_CLASS, SUBJECT_CLASS, namespace_id, keys)


def _lock_keys(whole: int, one: int, namespace_id: int, keys: set[int]) -> None:
    """Hold the namespace's `whole` lock shared and each key of class `one`, or, past
    `MOST_KEYS` keys, the namespace's `whole` lock alone and exclusively."""
    with connection.cursor() as cursor:
        if len(keys) > MOST_KEYS:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [whole, namespace_id])
            return
        # The namespace first (shared), then the keys in order: one order for all.
        # The locks are taken above the sort, in its order (PostgreSQL evaluates
        # volatile functions after a subquery's ORDER BY).
        cursor.execute(
            "SELECT count(CASE WHEN o.shared THEN pg_advisory_xact_lock_shared(o.c, o.k)"
            " ELSE pg_advisory_xact_lock(o.c, o.k) END) FROM ("
            " SELECT %s AS c, %s AS k, true AS shared"
            " UNION ALL SELECT %s, k, false FROM unnest(%s::int[]) AS k"
            " ORDER BY shared DESC, k) AS o",
            [whole, namespace_id, one, sorted(keys)],
        )


def lock_in_order(model, key: str, namespace_id: int, ids) -> None:
    """Lock the existing rows of these subjects in order of id (PostgreSQL): two writers
    that each lock threads, then tasks, this way never wait for each other in a circle."""
    if connection.vendor == "postgresql" and ids:
        locked_rows(model, key, namespace_id, ids)


def locked_rows(model, key: str, namespace_id: int, ids) -> list[tuple[int, str]]:
    """The existing rows of these subjects (row id, subject id), locked in order of id as
    `lock_in_order` locks them (PostgreSQL; elsewhere only read): one statement for a
    writer that needs both."""
    if not ids:
        return []
    rows = model.objects.filter(namespace_id=namespace_id, **{f"{key}__any_of": list(ids)})
    if connection.vendor == "postgresql":
        rows = rows.order_by(key).select_for_update(no_key=True)
    return list(rows.values_list("pk", key))


def retrying[T](write: Callable[[], T]) -> T:
    """Run `write` (one whole transaction) again when PostgreSQL rolled it back to break
    a deadlock or a serialization conflict: it was all or nothing, so running it again
    is safe. Inside a caller's transaction it runs once: only the outermost can retry."""
    for attempt in range(1, ATTEMPTS + 1):
        outermost = not connection.in_atomic_block
        try:
            return write()
        except OperationalError as exc:
            code = getattr(exc.__cause__, "sqlstate", None)
            if not outermost or code not in RETRYABLE or attempt == ATTEMPTS:
                raise
            log.info("write rolled back (%s), attempt %d: trying again", code, attempt)
            time.sleep(random.uniform(0.01, 0.05) * attempt)
    raise AssertionError("unreachable")
