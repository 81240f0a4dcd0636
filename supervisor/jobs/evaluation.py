"""Evaluation jobs: the evaluation of what a batch touched (enqueued on its commit by
ingest), and the beat sweep that finds what is due or was missed. Ids as arguments,
idempotent bodies: a lost message is found again by the sweep."""

from __future__ import annotations

from celery import shared_task

from supervisor.core import clock
from supervisor.core.evaluate import evaluate, out_of_date
from supervisor.core.sweep import sweep


@shared_task(name="supervisor.evaluate", acks_late=True, soft_time_limit=120, time_limit=150)
def evaluate_touched(namespace_id: int, task_ids: list[str], thread_ids: list[str]) -> None:
    tasks, threads = out_of_date(namespace_id, task_ids, thread_ids)
    if tasks or threads:
        evaluate(namespace_id, clock.now(), tasks=tasks, threads=threads)


@shared_task(name="supervisor.sweep", acks_late=True, soft_time_limit=240, time_limit=300)
def sweep_due() -> int:
    return sweep(clock.now())
