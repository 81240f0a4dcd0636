"""The beat sweep: what the rows say is due, found through indexed columns.

A subject is looked at again when a time-based rule said so (`next_check_at`), or when
an event touched it after its last evaluation (a lost or unfinished evaluation job):
a lost Celery message costs one sweep interval, not a flag.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import F, Q

from .actions import requeue_due_actions
from .evaluate import evaluate
from .models import Task, Thread
from .source_silence import evaluate_sources

CHUNK = 500


def due_subjects(now: datetime, namespace_id: int | None = None) -> dict[int, tuple[set, set]]:
    """namespace -> (task ids, thread ids) whose evaluation is due or out of date."""
    found: dict[int, tuple[set, set]] = defaultdict(lambda: (set(), set()))
    stale = Q(evaluated_at__isnull=True, last_event_at__isnull=False) | Q(
        last_event_at__gt=F("evaluated_at")
    )
    scope = Q(namespace_id=namespace_id) if namespace_id is not None else Q()
    for slot, model, key in ((0, Task, "task_id"), (1, Thread, "thread_id")):
        rows = model.objects.filter(scope & (Q(next_check_at__lte=now) | stale))
        for ns, subject_id in rows.values_list("namespace_id", key):
            found[ns][slot].add(subject_id)
    return dict(found)


def sweep(now: datetime, namespace_id: int | None = None) -> int:
    """Evaluate every due subject, in chunks; return how many subjects were looked at."""
    count = 0
    for ns, (tasks, threads) in due_subjects(now, namespace_id).items():
        tasks, threads = sorted(tasks), sorted(threads)
        for start in range(0, max(len(tasks), len(threads)), CHUNK):
            chunk_tasks = tasks[start : start + CHUNK]
            chunk_threads = threads[start : start + CHUNK]
            evaluate(ns, now, tasks=chunk_tasks, threads=chunk_threads)
            count += len(chunk_tasks) + len(chunk_threads)
    if namespace_id is None:
        evaluate_sources(now)
        requeue_due_actions(now)
    return count
