"""Validate and apply events: the one path for HTTP, connectors and replay.

Each event is stored once per (source, id), the first one wins. Entity rows are
derived so that arrival order does not matter: every described part of an entity
keeps the `at` and id of the event that described it, and a later description
(by `at`, then event id) replaces an earlier one, whichever arrives first.

Here a batch is read and validated, and its evaluation enqueued once it commits; its
one transaction is `batch.py`, what storage refuses `refusals.py`, the merge of its
events into entity rows `mirror.py`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest

from supervisor.core import clock, dispatch
from supervisor.core.contract.events import Event, EventError, event_id_of, parse_event, storable
from supervisor.core.ingest.batch import IngestResult, letter_body
from supervisor.core.ingest.refusals import store_or_refuse
from supervisor.core.models import Source, Task, Thread
from supervisor.core.store.entity_locks import lock_in_order

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UnreadableLine:
    """An NDJSON line that is not a JSON object: rejected with id null, kept raw."""

    text: str
    error: str


def do_ingest(source: Source, raw_events: list[Any]) -> IngestResult:
    """Apply a batch from `source` and enqueue the evaluation of what it touched once
    its transaction commits: what every caller outside replay and the tests wants."""
    result = apply_events(source, raw_events)
    evaluate_after_commit(source.namespace_id, result)
    return result


def apply_events(source: Source, raw_events: list[Any]) -> IngestResult:
    """Validate, store and apply a batch from `source`; valid events are kept even
    when others are rejected, and rejected ones go to the dead-letter list."""
    result = IngestResult()
    valid: list[Event] = []
    raw_by_id: dict[str, Any] = {}
    dead: list[dict[str, Any]] = []  # DeadLetter fields: rows are made per attempt
    seen_in_batch: set[str] = set()
    index_of: dict[str, int] = {}  # a valid event's place in the batch, by its id
    for index, raw in enumerate(raw_events):
        if isinstance(raw, UnreadableLine):
            error = storable(raw.error)
            result.rejected.append({"index": index, "id": None, "error": error})
            # Kept as sent, but for NUL: PostgreSQL text cannot hold it (an escape instead).
            dead.append({"body": storable(raw.text), "error": error})
            continue
        try:
            event = parse_event(raw)
        except EventError as exc:
            event_id, error = event_id_of(raw), storable(str(exc))
            result.rejected.append({"index": index, "id": event_id, "error": error})
            dead.append({"event_id": event_id, "body": letter_body(raw), "error": error})
            continue
        if event.id in seen_in_batch:
            result.duplicates += 1
            continue
        seen_in_batch.add(event.id)
        valid.append(event)
        raw_by_id[event.id] = raw
        index_of[event.id] = index

    return store_or_refuse(source, valid, raw_by_id, index_of, dead, result)


def evaluate_after_commit(namespace_id: int, result: IngestResult) -> None:
    """Enqueue the evaluation of what a batch touched, once its transaction commits."""
    if not (result.touched_tasks or result.touched_threads):
        return
    tasks, threads = sorted(result.touched_tasks), sorted(result.touched_threads)

    def committed() -> None:
        mark_committed(namespace_id, tasks, threads)
        dispatch.enqueue_evaluation(namespace_id, tasks, threads)

    transaction.on_commit(committed)


def mark_committed(namespace_id: int, tasks: list[str], threads: list[str]) -> None:
    """Move the subjects' last_event_at to after the batch's commit.

    Ingest writes last_event_at inside its transaction, before it commits. An evaluation
    that took its `now` in between and read the subjects before the commit did not see
    the batch, yet recorded evaluated_at later than last_event_at: its job and the sweep
    then took the subjects for up to date, and a flag stayed wrong (seen under load in
    the fault suite). A time taken after the commit is later than the `now` of any
    evaluation that could have missed the batch."""
    now = clock.now()
    try:
        # Threads, then tasks, each in order of id: the order ingest locks them in.
        with transaction.atomic():
            for model, key, ids in ((Thread, "thread_id", threads), (Task, "task_id", tasks)):
                if ids:
                    lock_in_order(model, key, namespace_id, ids)
                    model.objects.filter(
                        namespace_id=namespace_id, **{f"{key}__any_of": ids}
                    ).update(last_event_at=Greatest(F("last_event_at"), Value(now)))
    except DatabaseError as exc:  # down since the commit: the batch's own time stays
        log.warning("could not mark %d subject(s) after their batch: %s", len(tasks), exc)
