"""The mirror: a batch's events merged into the entity rows of its namespace (threads,
tasks, reports, runs, background items, wakes, tool rejections, task requests), read
as plain values, merged in dicts and written back with one upsert per table.

Every described part of an entity keeps the `at` and id of the event that described
it, and a later description (by `at`, then event id) replaces an earlier one,
whichever arrives first.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import DatabaseError, transaction
from django.db.models import F, Q

from supervisor.core import clock
from supervisor.core.contract.events import Event
from supervisor.core.facts.ownership import normalized
from supervisor.core.ingest.answered_requests import keep_answered
from supervisor.core.ingest.entity_rows import model_kind, named_entities, new_row, owned_columns
from supervisor.core.models import (
    BackgroundItem,
    Environment,
    Run,
    Source,
    Task,
    TaskReport,
    TaskRequest,
    Thread,
    ToolRejection,
    Wake,
)
from supervisor.core.store.batch_write import insert_rows, set_rows
from supervisor.core.store.entity_locks import lock_in_order

log = logging.getLogger(__name__)


def _newer(at: datetime, event_id: str, current_at: datetime | None, current_event: str | None):
    """Does a description at (at, event_id) replace the one kept? Later `at`, then greater id."""
    if current_event is None:
        return True
    return (at, event_id) > (current_at, current_event)


class Ref(str):
    """A thread named by its orchestrator id, where a row keeps the thread's row id:
    resolved when the batch's threads are written."""


class Mirror:
    """Entity rows of one namespace touched by a batch, loaded as plain values, merged
    in dicts and written back with one upsert per table (set_rows)."""

    def __init__(self, source: Source, named: dict[str, set[str]] | None = None):
        self.source = source
        self.named = named
        self.namespace_id = source.namespace_id
        self.threads: dict[str, dict] = {}
        self.tasks: dict[str, dict] = {}
        self.runs: dict[str, dict] = {}
        self.items: dict[str, dict] = {}
        self.wakes: dict[str, dict] = {}
        self.loaded: dict[tuple[str, str], dict] = {}
        self.reports: list[tuple[str, Event]] = []
        self.rejections: list[Event] = []
        self.requests: list[Event] = []
        self.environments: dict[str, datetime] = {}
        self.touched_tasks: set[str] = set()
        self.touched_threads: set[str] = set()
        self._pending: list[Event] = []

    # Events are collected first so that every row they name is loaded in one query per model.
    def apply(self, event: Event) -> None:
        self._pending.append(event)

    def save(self) -> None:
        self._load(self._pending)
        for event in self._pending:
            seen = self.environments.get(event.env)
            self.environments[event.env] = max(seen, event.at) if seen else event.at
            getattr(self, "_" + event.type.replace(".", "_"))(event, event.data)
        self._write()

    def _load(self, events: list[Event]) -> None:
        # What the batch locked (a superset when some of its events were duplicates).
        want = self.named if self.named is not None else named_entities(events)
        for rows, model, key, extra in (
            (self.threads, Thread, "thread_id", {}),
            (self.tasks, Task, "task_id", {}),
            (self.runs, Run, "run_id", {}),
            (self.items, BackgroundItem, "item_id", {}),
            # A delivery touches the wake's thread: its orchestrator id comes along.
            (self.wakes, Wake, "wake_id", {"thread_ref": F("thread__thread_id")}),
        ):
            ids = sorted(want[model_kind(model)])
            for start in range(0, len(ids), 500):
                query = model.objects.filter(
                    namespace_id=self.namespace_id, **{f"{key}__in": ids[start : start + 500]}
                )
                for row in query.values("id", "namespace_id", *owned_columns(model), **extra):
                    rows[row[key]] = row
                    self.loaded[(key, row[key])] = dict(row)

    def _thread(self, thread_id: str | None) -> Ref | None:
        """The thread, made if new and marked touched: its reference for a row."""
        if thread_id is None:
            return None
        if thread_id not in self.threads:
            self.threads[thread_id] = new_row(Thread, self.namespace_id, thread_id)
        self.touched_threads.add(thread_id)
        return Ref(thread_id)

    def _entity(self, cache: dict, model, entity_id: str, **defaults) -> dict:
        row = cache.get(entity_id)
        if row is None:
            row = cache[entity_id] = new_row(model, self.namespace_id, entity_id)
            row.update(defaults)
        return row

    def _task(self, task_id: str) -> dict:
        self.touched_tasks.add(task_id)
        return self._entity(self.tasks, Task, task_id)

    def _run(self, event: Event) -> dict:
        return self._entity(
            self.runs, Run, event.data.run, thread_id=self._thread(event.data.thread)
        )

    def _item(self, event: Event) -> dict:
        return self._entity(
            self.items, BackgroundItem, event.data.item, thread_id=self._thread(event.data.thread)
        )

    def _wake(self, wake_id: str) -> dict:
        return self._entity(self.wakes, Wake, wake_id, thread_ref=None)

    # One method per event type: _<type with dots as underscores>.

    def _thread_seen(self, event, data):
        self._thread(data.thread)
        thread = self.threads[data.thread]
        self._thread(data.parent_thread)
        if _newer(event.at, event.id, thread["seen_at"], thread["seen_event"]):
            thread["title"] = data.title or ""
            thread["parent_thread_id"] = data.parent_thread
            thread["provider"] = data.provider
            thread["model"] = data.model
            thread["seen_at"], thread["seen_event"] = event.at, event.id

    def _task_delegated(self, event, data):
        task = self._task(data.task)
        parent, child = self._thread(data.parent_thread), self._thread(data.child_thread)
        if _newer(event.at, event.id, task["delegated_at"], task["delegated_event"]):
            task["known"] = True
            task["parent_thread_id"], task["child_thread_id"] = parent, child
            task["title"], task["title_key"] = data.title, normalized(data.title) or ""
            task["title_hash"] = Task.hash_title(task["title_key"])
            task["mode"] = data.mode
            task["prompt"] = data.prompt
            task["client_request_id"] = data.client_request_id
            task["parent_run_id"] = data.parent_run
            task["target_env"] = data.target_env
            task["requested_at"] = data.requested_at
            task["follow_up_of"] = data.follow_up_of
            task["env"] = event.env
            task["delegated_at"], task["delegated_event"] = event.at, event.id

    def _task_reported(self, event, data):
        task = self._task(data.task)
        self.reports.append((data.task, event))
        if _newer(event.at, event.id, task["reported_at"], task["report_event"]):
            task["status"] = data.status
            task["work_state"] = data.work_state
            task["summary"] = data.summary
            task["result_run_id"] = data.result_run
            task["error"] = data.error
            task["pending_child_runs"] = data.pending_child_runs
            task["reported_at"], task["report_event"] = event.at, event.id

    def _run_requested(self, event, data):
        run = self._run(event)
        if _newer(event.at, event.id, run["requested_at"], run["requested_event"]):
            run["thread_id"] = self._thread(data.thread)
            run["ordinal"] = data.ordinal
            run["trigger_kind"] = data.trigger.kind
            run["trigger_ref"] = data.trigger.reference
            run["env"] = event.env
            run["requested_at"], run["requested_event"] = event.at, event.id

    def _run_started(self, event, data):
        run = self._run(event)
        if _newer(event.at, event.id, run["started_at"], run["started_event"]):
            run["started_at"], run["started_event"] = event.at, event.id

    def _run_activity(self, event, data):
        run = self._run(event)
        if _newer(event.at, event.id, run["last_activity_at"], run["activity_event"]):
            run["last_activity_at"], run["activity_event"] = event.at, event.id

    def _run_finished(self, event, data):
        run = self._run(event)
        if _newer(event.at, event.id, run["finished_at"], run["finished_event"]):
            run["status"] = data.status
            run["summary"] = data.summary
            run["error"] = data.error
            run["finish_cause"] = data.cause
            run["failure_class"] = data.failure_class
            run["finished_at"], run["finished_event"] = event.at, event.id

    def _background_started(self, event, data):
        item = self._item(event)
        if _newer(event.at, event.id, item["started_at"], item["started_event"]):
            item["thread_id"] = self._thread(data.thread)
            item["kind"] = data.kind
            item["run_id"] = data.run
            item["label"] = data.label
            item["awaited"] = data.awaited
            item["env"] = event.env
            item["started_at"], item["started_event"] = event.at, event.id

    def _background_finished(self, event, data):
        item = self._item(event)
        if _newer(event.at, event.id, item["finished_at"], item["finished_event"]):
            item["finish_status"] = data.status
            item["finished_at"], item["finished_event"] = event.at, event.id

    def _wake_queued(self, event, data):
        wake = self._wake(data.wake)
        thread = self._thread(data.thread)
        self._thread(data.source.thread)
        if data.source.task:
            self.touched_tasks.add(data.source.task)
        if _newer(event.at, event.id, wake["queued_at"], wake["queued_event"]):
            wake["thread_id"], wake["thread_ref"] = thread, data.thread
            wake["source_kind"] = data.source.kind
            wake["source_task"] = data.source.task
            wake["source_thread"] = data.source.thread
            wake["source_item"] = data.source.item
            wake["summary"] = data.summary
            wake["outcome"] = data.outcome
            wake["env"] = event.env
            wake["queued_at"], wake["queued_event"] = event.at, event.id

    def _wake_delivered(self, event, data):
        wake = self._wake(data.wake)
        # The delivery changes what the wake's target and source task are judged on.
        if wake["thread_ref"] is not None:
            self.touched_threads.add(wake["thread_ref"])
        if wake["source_task"]:
            self.touched_tasks.add(wake["source_task"])
        if _newer(event.at, event.id, wake["delivered_at"], wake["delivered_event"]):
            wake["delivered_run"] = data.run
            wake["delivered_at"], wake["delivered_event"] = event.at, event.id

    def _tool_rejected(self, event, data):
        self._thread(data.thread)
        self.rejections.append(event)

    def _task_requested(self, event, data):
        # The parent thread is the subject: touching it has it judged now, and its due
        # time (the request's `spawn_timeout`) has the sweep look at it again.
        self._thread(data.parent_thread)
        self.requests.append(event)

    def _write(self) -> None:
        # Detection bookkeeping (the evaluation job and the sweep start from these),
        # written with the rows themselves where the batch holds them.
        now = clock.now()
        ns = self.namespace_id
        for touched, rows in (
            (self.touched_tasks, self.tasks),
            (self.touched_threads, self.threads),
        ):
            for subject_id in touched:
                if subject_id in rows:
                    rows[subject_id]["last_event_at"] = now
        # Threads first: the other rows refer to them by row id. Each table's existing
        # rows are locked in one ordered pass first (mark_committed locks the same way).
        lock_in_order(Thread, "thread_id", ns, sorted(self.touched_threads | self.threads.keys()))
        thread_ids = self._upsert(Thread, "thread_id", self.threads)
        for row in self.threads.values():
            if "id" in row:
                thread_ids.setdefault(row["thread_id"], row["id"])

        def resolve(rows: dict, *columns: str) -> None:
            for row in rows.values():
                for column in columns:
                    if isinstance(row[column], Ref):
                        row[column] = thread_ids[row[column]]

        resolve(self.tasks, "parent_thread_id", "child_thread_id")
        resolve(self.runs, "thread_id")
        resolve(self.items, "thread_id")
        resolve(self.wakes, "thread_id")
        Thread.objects.filter(
            namespace_id=ns, thread_id__in=self.touched_threads - self.threads.keys()
        ).update(last_event_at=now)
        lock_in_order(Task, "task_id", ns, sorted(self.touched_tasks | self.tasks.keys()))
        task_ids = self._upsert(Task, "task_id", self.tasks, returning=bool(self.reports))
        for row in self.tasks.values():
            if "id" in row:
                task_ids.setdefault(row["task_id"], row["id"])
        self._upsert(Run, "run_id", self.runs)
        self._upsert(BackgroundItem, "item_id", self.items)
        self._upsert(Wake, "wake_id", self.wakes)
        source_id = self.source.pk
        insert_rows(
            TaskReport,
            [
                "task_id",
                "source_id",
                "event_id",
                "at",
                "status",
                "work_state",
                "summary",
                "result_run_id",
                "error",
                "pending_child_runs",
                "delivery",
                "cause",
                "delivery_record",
                "settled_deliveries",
                "failure_class",
            ],
            [
                (
                    task_ids[task],
                    source_id,
                    e.id,
                    e.at,
                    e.data.status,
                    e.data.work_state,
                    e.data.summary,
                    e.data.result_run,
                    e.data.error,
                    e.data.pending_child_runs,
                    e.data.delivery,
                    e.data.cause,
                    e.data.delivery_record,
                    e.data.settled_deliveries,
                    e.data.failure_class,
                )
                for task, e in self.reports
            ],
        )
        insert_rows(
            ToolRejection,
            [
                "namespace_id",
                "thread_id",
                "source_id",
                "event_id",
                "at",
                "tool",
                "code",
                "message",
                "caller",
                "env",
            ],
            [
                (
                    ns,
                    thread_ids[e.data.thread],
                    source_id,
                    e.id,
                    e.at,
                    e.data.tool,
                    e.data.code,
                    e.data.message,
                    e.data.caller,
                    e.env,
                )
                for e in self.rejections
            ],
        )
        insert_rows(
            TaskRequest,
            [
                "namespace_id",
                "parent_thread_id",
                "source_id",
                "event_id",
                "at",
                "client_request_id",
                "parent_run",
                "title",
                "env",
            ],
            [
                (
                    ns,
                    thread_ids[e.data.parent_thread],
                    source_id,
                    e.id,
                    e.at,
                    e.data.client_request_id,
                    e.data.parent_run,
                    e.data.title,
                    e.env,
                )
                for e in self.requests
            ],
        )
        keep_answered(ns, self._request_pairs(thread_ids))
        # Subjects named without their row in the batch (a wake's source task, say).
        Task.objects.filter(
            namespace_id=ns, task_id__in=self.touched_tasks - self.tasks.keys()
        ).update(last_event_at=now)
        _note_environments(ns, self.environments)

    def _request_pairs(self, thread_ids: dict[str, int]) -> set[tuple[int, str]]:
        """The (parent thread row id, request id) pairs whose answer the batch can change:
        its requests', and its tasks' before and after the batch."""
        pairs = {
            (thread_ids[e.data.parent_thread], e.data.client_request_id) for e in self.requests
        }
        for task_id, row in self.tasks.items():
            before = self.loaded.get(("task_id", task_id), {})
            for kept in (row, before):
                pairs.add((kept.get("parent_thread_id"), kept.get("client_request_id")))
        return pairs

    def _upsert(self, model, key: str, rows: dict, returning: bool = True) -> dict[str, int]:
        """Write the new and changed rows; the row ids of new ones by orchestrator id."""
        changed = [
            row
            for entity_id, row in sorted(rows.items())
            if self.loaded.get((key, entity_id)) != row
        ]
        columns = ["namespace_id", *owned_columns(model)]
        return set_rows(
            model,
            key,
            columns,
            [[row[c] for c in columns] for row in changed],
            returning=returning,
        )


def _note_environments(namespace_id: int, latest: dict[str, datetime]) -> None:
    """New environments get their row with the batch; the latest `at` of known ones
    moves after the commit, so that batches of one environment never wait for each
    other on its row (nothing reads that time but operators)."""
    Environment.objects.bulk_create(
        [
            Environment(namespace_id=namespace_id, name=n, last_event_at=at)
            for n, at in latest.items()
        ],
        ignore_conflicts=True,
    )

    def move_on() -> None:
        try:
            for name, at in sorted(latest.items()):
                Environment.objects.filter(namespace_id=namespace_id, name=name).filter(
                    Q(last_event_at__isnull=True) | Q(last_event_at__lt=at)
                ).update(last_event_at=at)
        except DatabaseError as exc:  # down since the commit: the next batch moves it
            log.warning("could not move %d environment(s) after their batch: %s", len(latest), exc)

    transaction.on_commit(move_on, robust=True)
