"""One batch's transaction, and what a batch is answered (`IngestResult`): under locks
on the entities it names, its dead letters, its new events stored once per (source, id),
the mirror's rows, the change log and the source's counters, all or nothing.

A batch waits only for batches naming the same entities (entity_locks.py), reads the
rows it names as plain values, merges in dicts and writes each table with one upsert.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F

from supervisor.core import changes, clock
from supervisor.core.changes import ChangeKind
from supervisor.core.contract.events import Event, storable
from supervisor.core.ingest.entity_rows import named_entities
from supervisor.core.ingest.mirror import Mirror
from supervisor.core.ingest.own_records import refused_claims
from supervisor.core.models import DeadLetter, IngestedEvent, Source
from supervisor.core.retention import known_event_ids
from supervisor.core.store import any_of  # noqa: F401  (registers the lookup)
from supervisor.core.store.batch_write import insert_rows
from supervisor.core.store.entity_locks import lock_entities


@dataclass
class IngestResult:
    accepted: int = 0
    duplicates: int = 0
    rejected: list[dict] = field(default_factory=list)
    touched_tasks: set[str] = field(default_factory=set)
    touched_threads: set[str] = field(default_factory=set)

    def as_response(self) -> dict:
        return {"accepted": self.accepted, "duplicates": self.duplicates, "rejected": self.rejected}


def store_batch(
    source: Source,
    valid: list[Event],
    raw_by_id: dict[str, Any],
    index_of: dict[str, int],
    dead: list[dict[str, Any]],
    parsed: IngestResult,
) -> IngestResult:
    """The batch's one transaction; run again whole if PostgreSQL rolled it back."""
    result = IngestResult(duplicates=parsed.duplicates, rejected=list(parsed.rejected))
    with transaction.atomic():
        # Writers wait only for batches naming the same entities (entity_locks).
        named = named_entities(valid)
        lock_entities(
            source.namespace_id,
            [(kind, entity_id) for kind, ids in named.items() for entity_id in ids],
        )
        if dead:
            DeadLetter.objects.bulk_create([DeadLetter(source=source, **d) for d in dead])
        existing = _existing_ids(source, [e.id for e in valid])
        # Events past their retention are gone; the reports and rejections they made are not.
        existing |= known_event_ids(source, [e for e in valid if e.id not in existing])
        new = [e for e in valid if e.id not in existing]
        result.duplicates += len(valid) - len(new)
        # Read in the batch's transaction: an orchestrator answers once a worker took the action.
        if claims := refused_claims(source, new):
            _refuse(source, [e for e in new if e.id in claims], claims, raw_by_id, index_of, result)
            new = [e for e in new if e.id not in claims]
        result.accepted = len(new)
        if new:
            received = clock.now()
            insert_rows(
                IngestedEvent,
                ["source_id", "event_id", "type", "at", "env", "data", "received_at"],
                [
                    (source.pk, e.id, e.type, e.at, e.env, _json(raw_by_id[e.id]), received)
                    for e in new
                ],
            )
            mirror = Mirror(source, named)
            for event in new:
                mirror.apply(event)
            mirror.save()
            result.touched_tasks = mirror.touched_tasks
            result.touched_threads = mirror.touched_threads
            _record_changes(source, result)
        if valid or result.rejected:
            # The source's counters move in the batch's own transaction; rejected-only
            # batches leave last_event_at alone.
            counts = {
                "events_accepted": F("events_accepted") + result.accepted,
                "events_rejected": F("events_rejected") + len(result.rejected),
            }
            if valid:
                counts["last_event_at"] = clock.now()
            Source.objects.filter(pk=source.pk).update(**counts)
    return result


def _refuse(
    source: Source,
    events: list[Event],
    errors: dict[str, str],
    raw_by_id: dict[str, Any],
    index_of: dict[str, int],
    result: IngestResult,
) -> None:
    """Valid events refused for what they claim, as dead letters like any other."""
    letters = []
    for event in events:
        error = storable(errors[event.id])
        result.rejected.append({"index": index_of[event.id], "id": event.id, "error": error})
        letters.append(
            DeadLetter(
                source=source, event_id=event.id, body=letter_body(raw_by_id[event.id]), error=error
            )
        )
    DeadLetter.objects.bulk_create(letters)
    result.rejected.sort(key=lambda rejected: rejected["index"])


def _json(raw: Any) -> str:
    """An accepted event's data as JSON text, as the JSON column stores it."""
    return json.dumps(raw.get("data", {}))


def letter_body(raw: Any) -> str:
    """A rejected event as JSON text that can be stored and replayed as it was sent."""
    try:
        return storable(json.dumps(raw, ensure_ascii=False, default=repr))
    except (ValueError, RecursionError):
        return storable(repr(raw)[:1_000_000])


def _existing_ids(source: Source, ids: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        found.update(
            IngestedEvent.objects.filter(source=source, event_id__any_of=chunk).values_list(
                "event_id", flat=True
            )
        )
    return found


def _record_changes(source: Source, result: IngestResult) -> None:
    namespace_id = source.namespace_id
    changes.record_all(
        [
            (ChangeKind.TASK_UPDATED, changes.Subject("task", task_id, namespace_id))
            for task_id in sorted(result.touched_tasks)
        ]
        + [
            (ChangeKind.THREAD_UPDATED, changes.Subject("thread", thread_id, namespace_id))
            for thread_id in sorted(result.touched_threads)
        ]
    )
