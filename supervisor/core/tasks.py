"""Named Celery tasks: thin wrappers with ids as arguments and idempotent bodies.

Rows are the record of what must be done; a lost message is found again by the sweep.
"""

from __future__ import annotations

import logging
import time

from celery import shared_task
from django.db import DatabaseError, transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest

from . import actions, clock
from .evaluate import evaluate, out_of_date
from .ingest import IngestResult
from .models import Task, Thread
from .retention import prune
from .sweep import sweep

log = logging.getLogger(__name__)

WARN_EVERY = 60.0  # seconds between warnings while the broker is down
_warned_at, _unsent = -WARN_EVERY, 0
# One quick retry: a request must not wait on a broker that is down. (retry=False is
# slower: it falls back on the connection's own 4 s of connection attempts, measured
# at about 6 s a publish with Redis down; this policy gives up within about 0.1 s.)
PUBLISH_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.1}


@shared_task(name="supervisor.evaluate", acks_late=True, soft_time_limit=120, time_limit=150)
def evaluate_touched(namespace_id: int, task_ids: list[str], thread_ids: list[str]) -> None:
    tasks, threads = out_of_date(namespace_id, task_ids, thread_ids)
    if tasks or threads:
        evaluate(namespace_id, clock.now(), tasks=tasks, threads=threads)


@shared_task(name="supervisor.sweep", acks_late=True, soft_time_limit=240, time_limit=300)
def sweep_due() -> int:
    return sweep(clock.now())


@shared_task(name="supervisor.perform_action", acks_late=True, soft_time_limit=60, time_limit=90)
def perform_action(action_id: int) -> str:
    return actions.perform(action_id)


def evaluate_after_commit(namespace_id: int, result: IngestResult) -> None:
    """Enqueue the evaluation of what a batch touched, once its transaction commits."""
    if not (result.touched_tasks or result.touched_threads):
        return
    tasks, threads = sorted(result.touched_tasks), sorted(result.touched_threads)

    def committed() -> None:
        mark_committed(namespace_id, tasks, threads)
        enqueue_evaluation(namespace_id, tasks, threads)

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
        for model, key, ids in ((Task, "task_id", tasks), (Thread, "thread_id", threads)):
            if ids:
                model.objects.filter(namespace_id=namespace_id, **{f"{key}__in": ids}).update(
                    last_event_at=Greatest(F("last_event_at"), Value(now))
                )
    except DatabaseError as exc:  # down since the commit: the batch's own time stays
        log.warning("could not mark %d subject(s) after their batch: %s", len(tasks), exc)


def enqueue_evaluation(namespace_id: int, tasks: list[str], threads: list[str]) -> None:
    """Send the evaluation job; with the broker down, leave it to the sweep. The events
    are committed by then: a failure here must not turn the client's answer into an
    error (it would resend what is stored). The touched subjects are out of date, which
    is what the sweep looks for once the broker is back."""
    try:
        evaluate_touched.apply_async((namespace_id, tasks, threads), retry_policy=PUBLISH_RETRY)
    except Exception as exc:  # whatever the transport raises
        global _unsent, _warned_at
        _unsent += 1
        now = time.monotonic()
        if now - _warned_at >= WARN_EVERY:  # one line per outage, not one per batch
            log.warning(
                "broker unavailable, evaluation jobs left to the sweep (%d since the last "
                "warning): %s",
                _unsent,
                exc,
            )
            _warned_at, _unsent = now, 0


@shared_task(name="supervisor.prune", acks_late=True, soft_time_limit=3000, time_limit=3300)
def prune_old_rows() -> dict[str, int]:
    """Delete what is past its retention; a second run at once skips the rows it holds."""
    return prune(clock.now())
