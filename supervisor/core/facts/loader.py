"""Build rule snapshots (`core.snapshot`) from the stored rows.

Rows are read as plain values (no model instances): a snapshot is rebuilt on every
evaluation, so this is the hot path of detection.
"""

from __future__ import annotations

from collections import defaultdict

from django.db import connection
from django.db.models import OuterRef, Q, Subquery

from supervisor.core.facts.snapshot import (
    ItemView,
    RejectionView,
    ReportView,
    RequestView,
    RunView,
    Snapshot,
    TaskView,
    WakeView,
)
from supervisor.core.models import (
    BackgroundItem,
    Run,
    Task,
    TaskReport,
    TaskRequest,
    Thread,
    ToolRejection,
    Wake,
)
from supervisor.core.store import any_of  # noqa: F401  (registers the lookup)

# View field -> stored column, for each kind of row. Threads are read by key and named
# afterwards with one query (THREAD_FIELDS): joining the thread table for their names
# was planned as a merge join reading every thread.
THREAD_FIELDS = ("parent_thread", "child_thread", "thread")
TASK_COLUMNS = {
    "id": "task_id",
    "known": "known",
    "parent_thread": "parent_thread_id",
    "child_thread": "child_thread_id",
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
    "cause": "cause",
    "delivery_record": "delivery_record",
    "settled_deliveries": "settled_deliveries",
    "failure_class": "failure_class",
}
RUN_COLUMNS = {
    "id": "run_id",
    "thread": "thread_id",
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
            "failure_class",
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
    "thread": "thread_id",
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
    "thread": "thread_id",
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
    "thread": "thread_id",
    **{name: name for name in ("tool", "code", "message", "caller", "at")},
}

REQUEST_COLUMNS = {
    "event_id": "event_id",
    "parent_thread": "parent_thread_id",
    **{name: name for name in ("client_request_id", "at", "parent_run", "title")},
}


def _rows(model, where: Q, columns: dict, *extra: str) -> list[dict]:
    names = [*extra, *columns]
    return [
        dict(zip(names, values, strict=True))
        for values in model.objects.filter(where).values_list(*extra, *columns.values())
    ]


def _name_threads(*row_lists: list[dict]) -> None:
    """Each row's thread keys replaced by the threads' names, read in one query."""
    keys = {
        row[field]
        for rows in row_lists
        for row in rows
        for field in THREAD_FIELDS
        if row.get(field) is not None
    }
    names = dict(Thread.objects.filter(pk__any_of=keys).values_list("pk", "thread_id"))
    for rows in row_lists:
        for row in rows:
            for field in THREAD_FIELDS:
                if field in row and row[field] is not None:
                    # None for a thread deleted since the rows were read (retention).
                    row[field] = names.get(row[field])


def load_namespace(namespace_id: int) -> Snapshot:
    """Everything known in a namespace; a handful of queries whatever its size."""
    ns = Q(namespace_id=namespace_id)
    snap = _load(tasks=ns, runs=ns, items=ns, wakes=ns, rejections=ns, requests=ns)
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
            "child_thread_id", "parent_thread_id", "title_key", "task_id"
        )
    )
    unnamed = {task for child, _, _, task in subjects if child is None}
    children = {child for child, _, _, _ in subjects if child}
    children |= set(first_run_threads(namespace_id, unnamed).values())
    parents = {parent for _, parent, _, _ in subjects if parent}
    threads = set(
        Thread.objects.filter(ns, thread_id__any_of=thread_ids).values_list("pk", flat=True)
    )
    child_names = set(
        Thread.objects.filter(pk__any_of=children).values_list("thread_id", flat=True)
    )
    # Each kind of wake by its own index, then the rows by key: the three ORed were
    # planned as a scan of every wake.
    wakes, named, sent, beside = set(), set(), set(), set()
    for where, near in (
        (Q(thread_id__any_of=children), True),
        (Q(source_task__any_of=task_ids), True),
        (Q(source_thread__any_of=child_names), True),
        (Q(thread_id__any_of=parents | threads), False),
    ):
        for pk, source_task, source_thread, kind, target in Wake.objects.filter(
            ns, where
        ).values_list("pk", "source_task", "source_thread", "source_kind", "thread_id"):
            if pk in wakes:
                continue
            wakes.add(pk)
            if near or kind != "task" or source_task is None:
                named.add((source_task, source_thread))
            else:
                beside.add((source_task, source_thread))
            if kind == "task" and source_task in task_ids and target is not None:
                sent.add((source_task, target))
    # The task wakes to a parent or a judged thread that only sit beside the subjects
    # (a parent's wakes name all its children): of a task they name, the rules read only
    # whether it is known (orphan_wake, late_wake), so a known one is not loaded, and
    # the one whose child thread sent it is looked for only when it is not known. A
    # parent with many children had every subject load them all, with their reports.
    known_beside = set(
        Task.objects.filter(ns, task_id__any_of={t for t, _ in beside}, known=True).values_list(
            "task_id", flat=True
        )
    )
    named |= {(task, thread) for task, thread in beside if task not in known_beside}
    # A subject's task wakes that went elsewhere than its parent: a follow-up of it under
    # that thread makes the target right (misrouted_wake). Looked up only when there is
    # such a wake, by the parent-thread index.
    parent_of = {task: parent for _, parent, _, task in subjects}
    elsewhere = {thread for task, thread in sent if thread != parent_of.get(task)}
    follow_ups = set()
    if elsewhere:
        follow_ups = set(
            Task.objects.filter(
                ns, parent_thread_id__any_of=elsewhere, follow_up_of__any_of=task_ids
            ).values_list("pk", flat=True)
        )
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
    # titles.
    same_work, run_threads = set(), set(children)
    pairs = {(parent, title) for _, parent, title, _ in subjects if parent}
    for pk, child, _ in same_work_tasks(namespace_id, pairs):
        same_work.add(pk)
        if child is not None:
            run_threads.add(child)
    # Each kind of neighbour by its own index, then the rows by key: one query ORing the
    # four lists was planned as a scan of every task (0.4 s at 160,000 tasks).
    keys = set(same_work) | follow_ups
    # Tasks that never named their child thread, by the thread of their first run.
    unnamed_here = first_run_tasks(namespace_id, children | named_threads)
    unnamed_children = set()
    for where in (
        Q(task_id__any_of=task_ids | {task for task, _ in named if task} | unnamed_here),
        Q(parent_thread_id__any_of=children),
        Q(child_thread_id__any_of=children | named_threads),
    ):
        for pk, task_id, child in Task.objects.filter(ns, where).values_list(
            "pk", "task_id", "child_thread_id"
        ):
            keys.add(pk)
            if child is None:
                unnamed_children.add(task_id)
    # Their child threads are the threads of their first runs: the runs there are read.
    run_threads |= set(first_run_threads(namespace_id, unnamed_children - unnamed).values())
    # Of a thread that is only a parent here, the rules read whether a run of it is
    # unfinished and when the last one finished (never_delivered: a parent with no run
    # under way will take nothing); its runs grow with every wake it takes, and every
    # judged child read them all.
    parent_runs = _last_and_unfinished_runs(parents - run_threads)
    snap = _load(
        tasks=Q(pk__any_of=keys),
        runs=Q(thread_id__any_of=run_threads) | Q(pk__any_of=parent_runs),
        items=Q(thread_id__any_of=children),
        wakes=Q(pk__any_of=wakes),
        rejections=Q(thread_id__any_of=threads),
        # delegation_never_started reads only the requests no known task answers, which
        # ingest keeps marked (core.ingest.answered_requests).
        requests=Q(parent_thread_id__any_of=threads, answered=False),
    )
    snap.threads = set(thread_ids) | {
        name for t in snap.tasks.values() for name in (t.parent_thread, t.child_thread) if name
    }
    snap.known_beside = frozenset(known_beside - snap.tasks.keys())
    return snap


def _last_and_unfinished_runs(threads: set[int]) -> set[int]:
    """The runs (row ids) of these threads that have not finished, and the one of each
    that finished last."""
    if not threads:
        return set()
    unfinished = Run.objects.filter(thread_id__any_of=threads, finished_at__isnull=True)
    last = Subquery(
        Run.objects.filter(thread_id=OuterRef("pk"), finished_at__isnull=False)
        .order_by("-finished_at")
        .values("pk")[:1]
    )
    return set(unfinished.values_list("pk", flat=True)) | {
        pk
        for pk in Thread.objects.filter(pk__any_of=threads)
        .annotate(last=last)
        .values_list("last", flat=True)
        if pk is not None
    }


def first_run_threads(namespace_id: int, task_ids: set[str]) -> dict[str, int]:
    """Task id -> the thread (row id) of its first run (trigger `delegation`): the child
    thread of a task while no description of it names one (contract §3, §4)."""
    if not task_ids:
        return {}
    runs = Run.objects.filter(
        namespace_id=namespace_id, trigger_kind="delegation", trigger_ref__any_of=task_ids
    )
    return dict(runs.order_by("-ordinal").values_list("trigger_ref", "thread_id"))


def first_run_tasks(namespace_id: int, thread_keys: set[int]) -> set[str]:
    """The tasks whose first run is on one of these threads (row ids), by their ids."""
    if not thread_keys:
        return set()
    runs = Run.objects.filter(
        namespace_id=namespace_id, thread_id__any_of=thread_keys, trigger_kind="delegation"
    )
    return set(runs.values_list("trigger_ref", flat=True))


PAIRS_PER_QUERY = 200  # elsewhere than PostgreSQL: two parameters each, an OR of pairs


def same_work_tasks(namespace_id: int, pairs: set[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """(pk, child thread pk, task id) of the tasks under each (parent thread pk, title key): one
    probe of task_parent_title_hash per pair, the key itself compared on the rows found.
    Both columns as `= ANY` lists would match every parent with every title; PostgreSQL
    (before 17) then reads the parents' whole families rather than probe the index for
    each combination."""
    if not pairs:
        return []
    if connection.vendor == "postgresql":
        parents, titles = zip(*sorted(pairs), strict=True)
        hashes = [Task.hash_title(title) for title in titles]
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT t.id, t.child_thread_id, t.task_id
                FROM {connection.ops.quote_name(Task._meta.db_table)} t
                JOIN unnest(%s::bigint[], %s::text[], %s::text[]) AS k(parent, hash, title)
                  ON t.parent_thread_id = k.parent AND t.title_hash = k.hash
                  AND t.title_key = k.title
                WHERE t.namespace_id = %s
                """,
                [list(parents), hashes, list(titles), namespace_id],
            )
            return cursor.fetchall()
    found, pairs = [], sorted(pairs)
    for start in range(0, len(pairs), PAIRS_PER_QUERY):
        where = Q()
        for parent, title in pairs[start : start + PAIRS_PER_QUERY]:
            where |= Q(parent_thread_id=parent, title_hash=Task.hash_title(title), title_key=title)
        found += Task.objects.filter(where, namespace_id=namespace_id).values_list(
            "pk", "child_thread_id", "task_id"
        )
    return found


def _load(
    *,
    tasks: Q,
    runs: Q,
    items: Q | None,
    wakes: Q,
    rejections: Q | None,
    requests: Q | None = None,
) -> Snapshot:
    snap = Snapshot()
    task_rows = _rows(Task, tasks, TASK_COLUMNS, "pk")
    run_rows = _rows(Run, runs, RUN_COLUMNS)
    item_rows = _rows(BackgroundItem, items, ITEM_COLUMNS) if items is not None else []
    wake_rows = _rows(Wake, wakes, WAKE_COLUMNS)
    rejection_rows = (
        _rows(ToolRejection, rejections, REJECTION_COLUMNS) if rejections is not None else []
    )
    request_rows = _rows(TaskRequest, requests, REQUEST_COLUMNS) if requests is not None else []
    _name_threads(task_rows, run_rows, item_rows, wake_rows, rejection_rows, request_rows)
    reports = defaultdict(list)
    for task_pk, *values in TaskReport.objects.filter(
        task_id__any_of=[row["pk"] for row in task_rows]
    ).values_list("task_id", *REPORT_COLUMNS.values()):
        reports[task_pk].append(ReportView(**dict(zip(REPORT_COLUMNS, values, strict=True))))
    for fields in task_rows:
        task_pk = fields.pop("pk")
        ordered = tuple(sorted(reports[task_pk], key=lambda r: (r.at, r.event_id)))
        snap.tasks[fields["id"]] = TaskView(**fields, reports=ordered)
    snap.runs = {row["id"]: RunView(**row) for row in run_rows}
    snap.items = {row["id"]: ItemView(**row) for row in item_rows}
    snap.wakes = {row["id"]: WakeView(**row) for row in wake_rows}
    snap.rejections = [RejectionView(**row) for row in rejection_rows]
    snap.requests = [RequestView(**row) for row in request_rows]
    return snap
