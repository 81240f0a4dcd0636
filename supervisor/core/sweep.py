"""The beat sweep: what the rows say is due, found through indexed columns.

A subject is looked at again when a time-based rule said so (`next_check_at`), or when
an event touched it after its last evaluation (a lost or unfinished evaluation job):
a lost Celery message costs one sweep interval, not a flag.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import Q

from .actions import requeue_due_actions
from .evaluate import OUT_OF_DATE, evaluate
from .models import Task, Thread
from .source_silence import evaluate_sources

CHUNK = 500


def due_subjects(now: datetime, namespace_id: int | None = None) -> dict[int, tuple[set, set]]:
    """namespace -> (task ids, thread ids) whose evaluation is due or out of date."""
    return _subjects(Q(next_check_at__lte=now) | OUT_OF_DATE, namespace_id)


def _subjects(condition: Q, namespace_id: int | None) -> dict[int, tuple[set, set]]:
    found: dict[int, tuple[set, set]] = defaultdict(lambda: (set(), set()))
    scope = Q(namespace_id=namespace_id) if namespace_id is not None else Q()
    for slot, model, key in ((0, Task, "task_id"), (1, Thread, "thread_id")):
        rows = model.objects.filter(scope & condition)
        for ns, subject_id in rows.values_list("namespace_id", key):
            found[ns][slot].add(subject_id)
    return dict(found)


def sweep(now: datetime, namespace_id: int | None = None) -> int:
    """Evaluate every due subject, in chunks; return how many subjects were looked at.

    Out-of-date subjects are judged with everything their events can change, as the
    lost job would have; subjects due by the clock alone are judged by themselves."""
    count = 0
    stale = _subjects(OUT_OF_DATE, namespace_id)
    timed = _subjects(Q(next_check_at__lte=now), namespace_id)
    for ns, (tasks, threads) in timed.items():
        tasks -= stale.get(ns, (set(), set()))[0]
        threads -= stale.get(ns, (set(), set()))[1]
    for found, widen in ((stale, True), (timed, False)):
        for ns, (tasks, threads) in found.items():
            tasks, threads = sorted(tasks), sorted(threads)
            for start in range(0, max(len(tasks), len(threads)), CHUNK):
                chunk_tasks = tasks[start : start + CHUNK]
                chunk_threads = threads[start : start + CHUNK]
                evaluate(ns, now, tasks=chunk_tasks, threads=chunk_threads, widen=widen)
                count += len(chunk_tasks) + len(chunk_threads)
    if namespace_id is None:
        evaluate_sources(now)
        requeue_due_actions(now)
    return count
