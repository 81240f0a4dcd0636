"""Evaluation jobs: the evaluation of what a batch touched (enqueued on its commit by
ingest), and the beat sweep that finds what is due or was missed. Ids as arguments,
idempotent bodies: a lost message is found again by the sweep."""

from __future__ import annotations

from celery import shared_task

from supervisor.core import clock
from supervisor.core.detection.evaluate import catch_up
from supervisor.core.detection.sweep import sweep
from supervisor.core.store.exclusive import only_one


@shared_task(name="supervisor.evaluate", acks_late=True, soft_time_limit=120, time_limit=150)
def evaluate_touched(namespace_id: int, task_ids: list[str], thread_ids: list[str]) -> int:
    return catch_up(namespace_id, clock.now(), task_ids, thread_ids)


@shared_task(name="supervisor.sweep", acks_late=True, soft_time_limit=240, time_limit=300)
def sweep_due() -> int | None:
    # A sweep that outlasts its interval is not joined by the next: that one is skipped
    # (None), and the sweep after it finds whatever is still due.
    with only_one("sweep") as alone:
        return sweep(clock.now()) if alone else None
