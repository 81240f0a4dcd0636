"""Named Celery tasks: thin wrappers with ids as arguments and idempotent bodies.

Rows are the record of what must be done; a lost message is found again by the sweep.
"""

from __future__ import annotations

from celery import shared_task
from django.db import transaction

from . import actions, clock
from .evaluate import evaluate, out_of_date
from .ingest import IngestResult
from .sweep import sweep


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
    transaction.on_commit(lambda: evaluate_touched.delay(namespace_id, tasks, threads))
