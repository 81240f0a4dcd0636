"""Run the rules and turn their findings into flag openings and resolutions.

`evaluate(namespace, now)` judges a whole namespace (replay does this);
`evaluate(namespace, now, tasks=…, threads=…)` judges what those touched subjects can
affect, which is what the service does after each batch and on each sweep. Both write
through the `do_*` flag writers (flags.py), and never on top of a newer evaluation.

A rule that raises leaves its own kind's flags as they were; every other kind is
written, the subjects are due again at once (the sweep isolates the one that makes the
rule raise, records it and backs it off), and `RuleFailed` is raised after the write.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from supervisor.core.actions.outcomes import resolved_because
from supervisor.core.detection.settled import settled_tasks
from supervisor.core.facts.loader import load_for_subjects, load_namespace, same_work_tasks
from supervisor.core.facts.snapshot import DetectionSettings
from supervisor.core.flags.writers import (
    do_open_flags,
    do_resolve_flags,
    do_update_evidences,
)
from supervisor.core.models import OUT_OF_DATE, Flag, Run, Source, Task, Thread, Wake
from supervisor.core.rules import RULES, judge
from supervisor.core.store.batch_write import update_rows
from supervisor.core.store.entity_locks import lock_subjects, locked_rows, retrying

RULE_KINDS = [rule.KIND for rule in RULES]


class RuleFailed(Exception):
    """Rules raised while judging these subjects; the other kinds' flags were written.
    The message names each failed kind and its error; the first error is the cause."""

    def __init__(self, failed: dict[str, Exception]):
        self.failed = failed
        super().__init__(
            "; ".join(f"{kind}: {type(exc).__name__}: {exc}" for kind, exc in failed.items())
        )


def detection_settings(namespace_id: int) -> DetectionSettings:
    overrides = Source.objects.filter(namespace_id=namespace_id).order_by("pk")
    return DetectionSettings.from_overrides(
        settings.SUPERVISOR_DETECTION, *(source.settings for source in overrides)
    )


def affected_subjects(
    namespace_id: int, task_ids: Iterable[str], thread_ids: Iterable[str]
) -> tuple[set[str], set[str]]:
    """The subjects whose flags events about these tasks and threads can change: the
    tasks themselves, the tasks whose child or parent thread was touched, their siblings
    of the same title (duplicates), the tasks a wake naming them sits on (orphans), and
    the tasks they follow up (a follow-up's parent may be where a wake rightly went)."""
    ns = Q(namespace_id=namespace_id)
    task_ids, threads = set(task_ids), set(thread_ids)
    unnamed, followed = set(), set()
    for task_id, parent, child, follows in Task.objects.filter(
        ns, task_id__in=task_ids
    ).values_list("task_id", "parent_thread__thread_id", "child_thread__thread_id", "follow_up_of"):
        threads |= {t for t in (parent, child) if t}
        if child is None:
            unnamed.add(task_id)
        if follows:
            followed.add(follows)  # a follow-up may make the task's wake rightly sent
    # A task whose delegation names no child thread has the thread of its first run.
    first_runs = Run.objects.filter(ns, trigger_kind="delegation")
    threads |= set(
        first_runs.filter(trigger_ref__in=unnamed).values_list("thread__thread_id", flat=True)
    )
    # The wakes naming these tasks: an orphan sits on the task of the source thread, else
    # on the wake's target, which need not be the task's parent (a misrouted wake).
    orphan_threads, targets = set(), set()
    for source_thread, target in Wake.objects.filter(ns, source_task__in=task_ids).values_list(
        "source_thread", "thread__thread_id"
    ):
        orphan_threads |= {source_thread} if source_thread else set()
        targets |= {target} if target else set()
    on_first_runs = set(
        first_runs.filter(thread__thread_id__in=threads | orphan_threads).values_list(
            "trigger_ref", flat=True
        )
    )
    near = Task.objects.filter(
        ns,
        Q(task_id__in=task_ids | on_first_runs | followed)
        | Q(child_thread__thread_id__in=threads | orphan_threads)
        | Q(parent_thread__thread_id__in=threads, settled=False),  # settled.py
    ).values_list("task_id", "parent_thread_id", "title_key")
    tasks, pairs = set(), set()
    for task_id, parent, title in near:
        tasks.add(task_id)
        if parent:
            pairs.add((parent, title))
    # One probe of task_parent_title_hash per (parent, title), all in one statement.
    tasks |= {task_id for _, _, task_id in same_work_tasks(namespace_id, pairs)}
    return tasks, threads | targets


# Subjects of each type one catch-up takes beyond its own: a backlog goes in passes.
PASS = 500


def out_of_date(
    namespace_id: int, tasks: Iterable[str], threads: Iterable[str]
) -> tuple[set[str], set[str]]:
    """The given subjects less those judged since their last event: a later job (or the
    sweep) that judged them also judged everything their events can change. Ids with
    no row yet are kept. Under a backlog, jobs for busy subjects then cost nothing."""
    kept = []
    for model, key, ids in ((Task, "task_id", set(tasks)), (Thread, "thread_id", set(threads))):
        rows = model.objects.filter(namespace_id=namespace_id, **{f"{key}__in": ids})
        current = set(rows.exclude(OUT_OF_DATE).values_list(key, flat=True))
        kept.append(ids - current)
    return kept[0], kept[1]


def pending(namespace_id: int, limit: int = PASS) -> tuple[set[str], set[str]]:
    """Up to `limit` tasks and threads of the namespace out of date, longest first
    (a partial index holds exactly these rows)."""
    found = []
    for model, key in ((Task, "task_id"), (Thread, "thread_id")):
        rows = model.objects.filter(OUT_OF_DATE, namespace_id=namespace_id)
        found.append(set(rows.order_by("last_event_at").values_list(key, flat=True)[:limit]))
    return found[0], found[1]


def catch_up(namespace_id: int, now: datetime, tasks: Iterable[str], threads: Iterable[str]):
    """What an evaluation job does: judge the given subjects that are still out of date
    and, with them, what else of the namespace is (up to PASS of each type).

    Under a backlog the first job judges what many batches touched, each subject once,
    and the jobs queued behind it find their subjects judged and cost one query each:
    the evaluation of many batches coalesces into one per namespace and moment. No
    lease decides who evaluates: two jobs that start together both judge, and the
    evaluation's locks and flag writers keep that safe.
    """
    tasks, threads = out_of_date(namespace_id, tasks, threads)
    if not (tasks or threads):
        return 0
    more_tasks, more_threads = pending(namespace_id, PASS)
    tasks, threads = tasks | more_tasks, threads | more_threads
    evaluate(namespace_id, now, tasks=tasks, threads=threads)
    return len(tasks) + len(threads)


def evaluate(
    namespace_id: int,
    now: datetime,
    *,
    tasks: Iterable[str] | None = None,
    threads: Iterable[str] | None = None,
    widen: bool = True,
) -> datetime | None:
    """Make the open flags of the subjects exactly those the rules find at `now`; return
    the earliest time at which they could change with no new event (None: never).

    Subjects touched by events are judged with every subject the events can change
    (`affected_subjects`); `widen=False` judges only the given ones, for subjects due by
    the clock alone: each subject's own due time covers what time changes for it."""
    rules_settings = detection_settings(namespace_id)
    if tasks is None and threads is None:
        snap = load_namespace(namespace_id)
        task_ids = {t.id for t in snap.tasks.values() if t.known}
        thread_ids = set(snap.threads)
    else:
        if widen:
            task_ids, thread_ids = affected_subjects(namespace_id, tasks or (), threads or ())
        else:
            task_ids, thread_ids = set(tasks or ()), set(threads or ())
        snap = load_for_subjects(namespace_id, task_ids, thread_ids)
        snap.judged = frozenset(task_ids)
    judgement = judge(snap, rules_settings, now)
    findings, due = judgement.findings, judgement.due
    kinds = [kind for kind in RULE_KINDS if kind not in judgement.failed]
    if judgement.failed:
        # A failed kind's due times are unknown: look again as soon as the sweep may.
        by_type = (("task", task_ids), ("thread", thread_ids))
        due = {(kind, subject): now for kind, ids in by_type for subject in ids}

    settled = settled_tasks(snap, task_ids, bool(judgement.failed))

    def write() -> set[tuple[str, str]]:
        judged = {("task", t) for t in task_ids} | {("thread", t) for t in thread_ids}
        with transaction.atomic():
            # One writer at a time per subject (not per namespace), and never over a
            # newer evaluation.
            lock_subjects(namespace_id, judged)
            tasks = task_ids - _evaluated_after(Task, "task_id", namespace_id, task_ids, now)
            threads = thread_ids - _evaluated_after(
                Thread, "thread_id", namespace_id, thread_ids, now
            )
            subjects = {("task", t) for t in tasks} | {("thread", t) for t in threads}
            wanted = {
                (f.subject_type, f.subject_id, f.kind): f
                for f in findings
                if (f.subject_type, f.subject_id) in subjects
            }
            reconcile(
                namespace_id,
                subjects,
                wanted,
                now,
                kinds=kinds,
                because=lambda key: resolved_because(snap, *key),
            )
            # Threads, then tasks, each in order of id: the order every writer locks them in.
            _record_evaluation(Thread, "thread_id", namespace_id, threads, due, "thread", now)
            _record_evaluation(Task, "task_id", namespace_id, tasks, due, "task", now, settled)
        return subjects

    subjects = retrying(write)
    if judgement.failed:
        raise RuleFailed(judgement.failed) from next(iter(judgement.failed.values()))
    return min((when for key, when in due.items() if key in subjects), default=None)


def _subject_filter(subjects: set[tuple[str, str]]) -> Q:
    by_type = defaultdict(set)
    for subject_type, subject_id in subjects:
        by_type[subject_type].add(subject_id)
    query = Q(pk__in=[])
    for subject_type, ids in by_type.items():
        query |= Q(subject_type=subject_type, subject_id__in=ids)
    return query


def reconcile(
    namespace_id: int,
    subjects: set,
    wanted: dict,
    now: datetime,
    kinds: list | None = None,
    because=None,
) -> None:
    """Open what is wanted and not open, resolve what is open and not wanted, for these
    subjects (and kinds): compare-and-swap writes through the do_* flag writers.
    `because((subject type, subject id, kind))` says what resolved a flag."""
    flags = Flag.objects.filter(_subject_filter(subjects), namespace_id=namespace_id)
    if kinds is not None:
        flags = flags.filter(kind__in=kinds)
    open_flags = {(f.subject_type, f.subject_id, f.kind): f for f in flags.filter(state="open")}
    suppressed = {(f.subject_type, f.subject_id, f.kind): f for f in flags.filter(suppressed=True)}
    resolutions, updates = [], []
    for key, flag in open_flags.items():
        if key not in wanted:
            resolutions.append((flag, because(key) if because else None))
        elif flag.evidence != wanted[key].evidence:
            updates.append((flag, wanted[key].evidence))
    do_resolve_flags(resolutions, now)
    do_update_evidences(updates)
    # Suppressed: an operator resolved it while the condition held; it still holds.
    do_open_flags(
        namespace_id,
        [f for key, f in wanted.items() if key not in open_flags and key not in suppressed],
        now,
    )
    # A condition that stopped holding may open a new flag when it holds again.
    lifted = [flag.pk for key, flag in suppressed.items() if key not in wanted]
    if lifted:
        Flag.objects.filter(pk__in=lifted).update(suppressed=False)


def _evaluated_after(model, key: str, namespace_id: int, ids: set[str], now: datetime) -> set:
    return set(
        model.objects.filter(
            namespace_id=namespace_id, **{f"{key}__in": ids}, evaluated_at__gt=now
        ).values_list(key, flat=True)
    )


def _record_evaluation(model, key, namespace_id, ids, due, subject_type, now, settled=None):
    # Each subject has its own next check: one statement per chunk, not one per time.
    rows = locked_rows(model, key, namespace_id, ids)

    def record(subject_id) -> dict:
        written = {"evaluated_at": now, "next_check_at": due.get((subject_type, subject_id))}
        if settled is not None:
            written["settled"] = subject_id in settled
        return written

    update_rows(model, ((pk, record(subject_id)) for pk, subject_id in rows))
