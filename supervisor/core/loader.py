"""Build rule snapshots (`core.snapshot`) from the stored rows."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Q

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


def load_namespace(namespace_id: int) -> Snapshot:
    """Everything known in a namespace; a handful of queries whatever its size."""
    ns = Q(namespace_id=namespace_id)
    return _load(
        namespace_id,
        tasks=ns,
        runs=ns,
        items=ns,
        wakes=ns,
        rejections=ns,
    )


def load_for_task(task: Task) -> Snapshot:
    """The part of a namespace that task's rules read: its child thread's runs, items and
    wakes, the wakes to its parent, the tasks delegated from its child thread and its
    siblings of the same title (with their child threads' runs)."""
    child, parent = task.child_thread_id, task.parent_thread_id
    related_tasks = Q(pk=task.pk)
    if child:
        related_tasks |= Q(parent_thread_id=child)
    if parent:
        related_tasks |= Q(parent_thread_id=parent, title=task.title)
    tasks = Q(namespace_id=task.namespace_id) & related_tasks
    child_threads = set(
        Task.objects.filter(tasks)
        .exclude(child_thread=None)
        .values_list("child_thread_id", flat=True)
    )
    wakes = Q(source_task=task.task_id)
    for thread in filter(None, (child, parent)):
        wakes |= Q(thread_id=thread)
    if task.child_thread_id:
        wakes |= Q(source_thread=task.child_thread.thread_id)
    return _load(
        task.namespace_id,
        tasks=tasks,
        runs=Q(thread_id__in=child_threads | ({child} if child else set())),
        items=Q(thread_id=child) if child else None,
        wakes=Q(namespace_id=task.namespace_id) & wakes,
        rejections=None,
    )


def _load(namespace_id, *, tasks, runs, items, wakes, rejections) -> Snapshot:
    snap = Snapshot()
    task_rows = list(
        Task.objects.filter(tasks).values(
            "id",
            "task_id",
            "known",
            "parent_thread__thread_id",
            "child_thread__thread_id",
            "title",
            "mode",
            "prompt",
            "client_request_id",
            "parent_run_id",
            "target_env",
            "requested_at",
            "follow_up_of",
            "delegated_at",
            "delegated_event",
            "env",
        )
    )
    reports = defaultdict(list)
    for row in TaskReport.objects.filter(task_id__in=[r["id"] for r in task_rows]).values(
        "task_id",
        "event_id",
        "at",
        "status",
        "work_state",
        "summary",
        "result_run_id",
        "error",
        "pending_child_runs",
    ):
        reports[row.pop("task_id")].append(_report(row))
    for row in task_rows:
        snap.tasks[row["task_id"]] = TaskView(
            id=row["task_id"],
            known=row["known"],
            parent_thread=row["parent_thread__thread_id"],
            child_thread=row["child_thread__thread_id"],
            title=row["title"],
            mode=row["mode"],
            prompt=row["prompt"],
            client_request_id=row["client_request_id"],
            parent_run=row["parent_run_id"],
            target_env=row["target_env"],
            requested_at=row["requested_at"],
            follow_up_of=row["follow_up_of"],
            delegated_at=row["delegated_at"],
            delegated_event=row["delegated_event"],
            env=row["env"],
            reports=tuple(sorted(reports[row["id"]], key=lambda r: (r.at, r.event_id))),
        )
    for run in Run.objects.filter(runs).select_related("thread"):
        snap.runs[run.run_id] = run_view(run)
    if items is not None:
        for item in BackgroundItem.objects.filter(items).select_related("thread"):
            snap.items[item.item_id] = item_view(item)
    for wake in Wake.objects.filter(wakes).select_related("thread"):
        snap.wakes[wake.wake_id] = wake_view(wake)
    if rejections is not None:
        for rejection in ToolRejection.objects.filter(rejections).select_related("thread"):
            snap.rejections.append(
                RejectionView(
                    event_id=rejection.event_id,
                    thread=rejection.thread.thread_id,
                    tool=rejection.tool,
                    code=rejection.code,
                    message=rejection.message,
                    caller=rejection.caller,
                    at=rejection.at,
                )
            )
    snap.threads = {
        t
        for t in (
            *(t.parent_thread for t in snap.tasks.values()),
            *(t.child_thread for t in snap.tasks.values()),
            *(r.thread for r in snap.runs.values()),
        )
        if t
    }
    if tasks is not None and rejections is not None:
        snap.threads |= set(
            Thread.objects.filter(namespace_id=namespace_id).values_list("thread_id", flat=True)
        )
    return snap


def _report(row: dict) -> ReportView:
    return ReportView(
        event_id=row["event_id"],
        at=row["at"],
        status=row["status"],
        work_state=row["work_state"],
        summary=row["summary"],
        result_run=row["result_run_id"],
        error=row["error"],
        pending_child_runs=row["pending_child_runs"],
    )


def run_view(run: Run) -> RunView:
    return RunView(
        id=run.run_id,
        thread=run.thread.thread_id,
        ordinal=run.ordinal,
        trigger_kind=run.trigger_kind,
        trigger_ref=run.trigger_ref,
        requested_at=run.requested_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        status=run.status,
        summary=run.summary,
        error=run.error,
        last_activity_at=run.last_activity_at,
        env=run.env,
        requested_event=run.requested_event,
        started_event=run.started_event,
        finished_event=run.finished_event,
        activity_event=run.activity_event,
    )


def item_view(item: BackgroundItem) -> ItemView:
    return ItemView(
        id=item.item_id,
        thread=item.thread.thread_id,
        kind=item.kind,
        run=item.run_id,
        label=item.label,
        awaited=item.awaited,
        started_at=item.started_at,
        finished_at=item.finished_at,
        finish_status=item.finish_status,
        env=item.env,
        started_event=item.started_event,
        finished_event=item.finished_event,
    )


def wake_view(wake: Wake) -> WakeView:
    return WakeView(
        id=wake.wake_id,
        thread=wake.thread.thread_id if wake.thread_id else None,
        source_kind=wake.source_kind,
        source_task=wake.source_task,
        source_thread=wake.source_thread,
        source_item=wake.source_item,
        summary=wake.summary,
        outcome=wake.outcome,
        queued_at=wake.queued_at,
        delivered_at=wake.delivered_at,
        delivered_run=wake.delivered_run,
        env=wake.env,
        queued_event=wake.queued_event,
        delivered_event=wake.delivered_event,
    )
