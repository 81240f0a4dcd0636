"""What storage refuses of a batch for good, found by halves and refused as dead letters,
so that the rest of the batch is stored and its sender is never told to retry it."""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError

from supervisor.core.contract.events import Event, storable
from supervisor.core.ingest.batch import IngestResult, letter_body, store_batch
from supervisor.core.models import Source
from supervisor.core.store.entity_locks import retrying
from supervisor.core.store.storage_errors import refusal, refused_for_good

log = logging.getLogger(__name__)


def store_or_refuse(
    source: Source,
    valid: list[Event],
    raw_by_id: dict[str, Any],
    index_of: dict[str, int],
    dead: list[dict[str, Any]],
    parsed: IngestResult,
) -> IngestResult:
    """Store the batch. When storage refuses it for good (an error no retry cures,
    core.storage_errors), find the events it cannot hold by halves, as the sweep finds
    a failing subject, and refuse each as a dead letter saying what refused it: the
    rest of the batch is stored, and its sender is never told to retry what would be
    refused again (it would be stuck)."""
    try:
        return retrying(lambda: store_batch(source, valid, raw_by_id, index_of, dead, parsed))
    except DatabaseError as exc:
        if not valid or not refused_for_good(exc):
            raise
        error = exc  # handled outside this block: a refusal's traceback stays one
    if len(valid) == 1:
        event = valid[0]
        message = storable(f"event: {refusal(error)}")
        log.warning("event %r of %s refused by storage: %s", event.id, source, message)
        refused = IngestResult(
            duplicates=parsed.duplicates,
            rejected=[
                *parsed.rejected,
                {"index": index_of[event.id], "id": event.id, "error": message},
            ],
        )
        letter = {"event_id": event.id, "body": letter_body(raw_by_id[event.id]), "error": message}
        return retrying(
            lambda: store_batch(source, [], raw_by_id, index_of, [*dead, letter], refused)
        )
    half = len(valid) // 2
    first = store_or_refuse(source, valid[:half], raw_by_id, index_of, dead, parsed)
    second = store_or_refuse(source, valid[half:], raw_by_id, index_of, [], IngestResult())
    return IngestResult(
        accepted=first.accepted + second.accepted,
        duplicates=first.duplicates + second.duplicates,
        rejected=sorted(first.rejected + second.rejected, key=lambda r: r["index"]),
        touched_tasks=first.touched_tasks | second.touched_tasks,
        touched_threads=first.touched_threads | second.touched_threads,
    )
