"""The beat sweep: what the rows say is due, found through indexed columns.

A subject is looked at again when a time-based rule said so (`next_check_at`), or when
an event touched it after its last evaluation (a lost or unfinished evaluation job):
a lost Celery message costs one sweep interval, not a flag.

No subject stops the sweep: a chunk that raises is halved until the subjects that raise
are alone; those are recorded (sweep_failures.py) and left out until their backoff
ends, and every other subject and step goes on.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import Q

from supervisor.core.actions.writers import requeue_due_actions
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.detection.source_silence import evaluate_sources
from supervisor.core.detection.sweep_failures import LOST_DATABASE, Failures
from supervisor.core.models import OUT_OF_DATE, Task, Thread

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
    failures = Failures("sweep", now)
    _forget_judged_since(failures)
    count = 0
    stale = _subjects(OUT_OF_DATE, namespace_id)
    timed = _subjects(Q(next_check_at__lte=now), namespace_id)
    for ns, (tasks, threads) in timed.items():
        tasks -= stale.get(ns, (set(), set()))[0]
        threads -= stale.get(ns, (set(), set()))[1]
    held = {kind: failures.backing_off(kind) for kind in ("task", "thread")}
    for found, widen in ((stale, True), (timed, False)):
        for ns, (tasks, threads) in found.items():
            tasks = sorted(t for t in tasks if (ns, t) not in held["task"])
            threads = sorted(t for t in threads if (ns, t) not in held["thread"])
            for start in range(0, max(len(tasks), len(threads)), CHUNK):
                chunk_tasks = tasks[start : start + CHUNK]
                chunk_threads = threads[start : start + CHUNK]
                _judge(failures, ns, now, chunk_tasks, chunk_threads, widen)
                count += len(chunk_tasks) + len(chunk_threads)
    if namespace_id is None:
        for step in (evaluate_sources, requeue_due_actions):
            with failures.isolated("step", step.__name__):
                step(now)
    return count


def _forget_judged_since(failures: Failures) -> None:
    """A failing subject that an evaluation job has judged since works again."""
    for model, kind, key in ((Task, "task", "task_id"), (Thread, "thread", "thread_id")):
        rows = [f for f in failures.rows.values() if f.subject_type == kind]
        judged = Q(pk__in=[])
        for f in rows:
            judged |= Q(
                namespace_id=f.namespace_id,
                evaluated_at__gt=f.last_failed_at,
                **{key: f.subject_id},
            )
        if rows:
            for ns, subject_id in model.objects.filter(judged).values_list("namespace_id", key):
                failures.worked(kind, [subject_id], ns)


def _judge(failures: Failures, ns: int, now, tasks: list, threads: list, widen: bool) -> None:
    """Evaluate these subjects; when that raises, halve them until the ones that raise
    are alone, and record those."""
    try:
        evaluate(ns, now, tasks=tasks, threads=threads, widen=widen)
    except LOST_DATABASE:
        raise
    except Exception as exc:
        error = exc  # handled below, outside this block: tracebacks stay one failure's
    else:
        failures.worked("task", tasks, ns)
        failures.worked("thread", threads, ns)
        return
    subjects = [("task", t) for t in tasks] + [("thread", t) for t in threads]
    if len(subjects) > 1:
        half = len(subjects) // 2
        for part in (subjects[:half], subjects[half:]):
            _judge(failures, ns, now, *_split(part), widen)
    elif widen:  # alone, a neighbour its events reach may be what raises
        _judge(failures, ns, now, tasks, threads, False)
    else:
        failures.record(*subjects[0], error, ns)


def _split(subjects: list[tuple[str, str]]) -> tuple[list, list]:
    return (
        [s for kind, s in subjects if kind == "task"],
        [s for kind, s in subjects if kind == "thread"],
    )
