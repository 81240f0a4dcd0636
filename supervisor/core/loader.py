"""Build rule snapshots (`core.snapshot`) from the stored rows.

Rows are read as plain values (no model instances): a snapshot is rebuilt on every
evaluation, so this is the hot path of detection.
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Q

from . import any_of  # noqa: F401  (registers the lookup)
from .models import BackgroundItem, Run, Task, TaskReport, Thread, ToolRejection, Wake
from .snapshot import (
    ItemView,
    RejectionView,
    ReportView,
    RunView,
    Snapshot,
    TaskView,
    WakeView,
)

# View field -> stored column, for each kind of row.
TASK_COLUMNS = {
    "id": "task_id",
    "known": "known",
    "parent_thread": "parent_thread__thread_id",
    "child_thread": "child_thread__thread_id",
    "title": "title",
    "mode": "mode",
    "prompt": "prompt",
    "client_request_id": "client_request_id",
    "parent_run": "parent_run_id",
    "target_env": "target_env",
    "requested_at": "requested_at",
    "follow_up_of": "follow_up_of",
    "delegated_at": "delegated_at",
    "delegated_event": "delegated_event",
    "env": "env",
}
REPORT_COLUMNS = {
    "event_id": "event_id",
    "at": "at",
    "status": "status",
    "work_state": "work_state",
    "summary": "summary",
    "result_run": "result_run_id",
    "error": "error",
    "pending_child_runs": "pending_child_runs",
    "delivery": "delivery",
}
RUN_COLUMNS = {
    "id": "run_id",
    "thread": "thread__thread_id",
    **{
        name: name
        for name in (
            "ordinal",
            "trigger_kind",
            "trigger_ref",
            "requested_at",
            "started_at",
            "finished_at",
            "status",
            "summary",
            "error",
            "finish_cause",
            "last_activity_at",
            "env",
            "requested_event",
            "started_event",
            "finished_event",
            "activity_event",
        )
    },
}
ITEM_COLUMNS = {
    "id": "item_id",
    "thread": "thread__thread_id",
    "run": "run_id",
    **{
        name: name
        for name in (
            "kind",
            "label",
            "awaited",
            "started_at",
            "finished_at",
            "finish_status",
            "env",
            "started_event",
            "finished_event",
        )
    },
}
WAKE_COLUMNS = {
    "id": "wake_id",
    "thread": "thread__thread_id",
    **{
        name: name
        for name in (
            "source_kind",
            "source_task",
            "source_thread",
            "source_item",
            "summary",
            "outcome",
            "queued_at",
            "delivered_at",
            "delivered_run",
            "env",
            "queued_event",
            "delivered_event",
        )
    },
}
REJECTION_COLUMNS = {
    "event_id": "event_id",
    "thread": "thread__thread_id",
    **{name: name for name in ("tool", "code", "message", "caller", "at")},
}


def _views(model, where: Q, view, columns: dict):
    names = list(columns)
    for values in model.objects.filter(where).values_list(*columns.values()):
        yield view(**dict(zip(names, values, strict=True)))


def load_namespace(namespace_id: int) -> Snapshot:
    """Everything known in a namespace; a handful of queries whatever its size."""
    ns = Q(namespace_id=namespace_id)
    snap = _load(tasks=ns, runs=ns, items=ns, wakes=ns, rejections=ns)
    snap.threads = set(
        Thread.objects.filter(namespace_id=namespace_id).values_list("thread_id", flat=True)
    )
    return snap


def load_for_task(task: Task) -> Snapshot:
    """The part of a namespace one task's rules read (for its page)."""
    return load_for_subjects(task.namespace_id, {task.task_id}, set())


def load_for_subjects(namespace_id: int, task_ids: set[str], thread_ids: set[str]) -> Snapshot:
    """The part of a namespace that the rules read for these subjects: each task's child
    thread (runs, items, wakes), the runs of and wakes to its parent, the tasks delegated from its
    child thread or beside it from its parent, the tasks its wakes name; for each thread,
    its wakes and rejections and the tasks those wakes concern."""
    ns = Q(namespace_id=namespace_id)
    subjects = list(
        Task.objects.filter(ns, task_id__any_of=task_ids).values_list(
            "child_thread_id", "parent_thread_id", "title_key"
        )
    )
    children = {child for child, _, _ in subjects if child}
    parents = {parent for _, parent, _ in subjects if parent}
    titles = {title for _, _, title in subjects}
    threads = set(
        Thread.objects.filter(ns, thread_id__any_of=thread_ids).values_list("pk", flat=True)
    )
    child_names = set(
        Thread.objects.filter(pk__any_of=children).values_list("thread_id", flat=True)
    )
    wakes = (
        Q(thread_id__any_of=children | parents | threads)
        | Q(source_task__any_of=task_ids)
        | Q(source_thread__any_of=child_names)
    )
    named = set(Wake.objects.filter(ns & wakes).values_list("source_task", "source_thread"))
    # Thread names to keys first: an OR over a join keeps PostgreSQL from using indexes.
    named_threads = set(
        Thread.objects.filter(ns, thread_id__any_of={t for _, t in named if t}).values_list(
            "pk", flat=True
        )
    )
    # Of the tasks beside a subject under its parent, only those that may be the same
    # work delegated earlier (duplicate_delegation: the same title) are read, found by
    # the title's key, with the runs of their child threads. A parent with thousands of
    # tasks made each due task load them all, reports included, and then read all their
    # titles. The parents' runs are read too: a parent with no run under way will take
    # nothing (never_delivered).
    same_work, run_threads = set(), set(children) | parents
    for pk, child in Task.objects.filter(
        ns, parent_thread_id__any_of=parents, title_key__any_of=titles
    ).values_list("pk", "child_thread_id"):
        same_work.add(pk)
        if child is not None:
            run_threads.add(child)
    # Each kind of neighbour by its own index, then the rows by key: one query ORing the
    # four lists was planned as a scan of every task (0.4 s at 160,000 tasks).
    keys = set(same_work)
    for where in (
        Q(task_id__any_of=task_ids | {task for task, _ in named if task}),
        Q(parent_thread_id__any_of=children),
        Q(child_thread_id__any_of=children | named_threads),
    ):
        keys.update(Task.objects.filter(ns, where).values_list("pk", flat=True))
    snap = _load(
        tasks=Q(pk__any_of=keys),
        runs=Q(thread_id__any_of=run_threads),
        items=Q(thread_id__any_of=children),
        wakes=ns & wakes,
        rejections=Q(thread_id__any_of=threads),
    )
    snap.threads = set(thread_ids) | {
        name for t in snap.tasks.values() for name in (t.parent_thread, t.child_thread) if name
    }
    return snap


def _load(*, tasks: Q, runs: Q, items: Q | None, wakes: Q, rejections: Q | None) -> Snapshot:
    snap = Snapshot()
    task_rows = list(Task.objects.filter(tasks).values_list("pk", *TASK_COLUMNS.values()))
    reports = defaultdict(list)
    for task_pk, *values in TaskReport.objects.filter(
        task_id__any_of=[row[0] for row in task_rows]
    ).values_list("task_id", *REPORT_COLUMNS.values()):
        reports[task_pk].append(ReportView(**dict(zip(REPORT_COLUMNS, values, strict=True))))
    for task_pk, *values in task_rows:
        fields = dict(zip(TASK_COLUMNS, values, strict=True))
        ordered = tuple(sorted(reports[task_pk], key=lambda r: (r.at, r.event_id)))
        snap.tasks[fields["id"]] = TaskView(**fields, reports=ordered)
    snap.runs = {run.id: run for run in _views(Run, runs, RunView, RUN_COLUMNS)}
    if items is not None:
        snap.items = {i.id: i for i in _views(BackgroundItem, items, ItemView, ITEM_COLUMNS)}
    snap.wakes = {wake.id: wake for wake in _views(Wake, wakes, WakeView, WAKE_COLUMNS)}
    if rejections is not None:
        snap.rejections = list(_views(ToolRejection, rejections, RejectionView, REJECTION_COLUMNS))
    return snap
