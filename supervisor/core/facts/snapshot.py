"""A read-only picture of one namespace's tasks, runs, items and wakes.

Rules are pure functions of a snapshot, the settings and "now"; the loader
(`core.loader`) builds snapshots from the stored rows, tests build them by hand.
Times are aware UTC datetimes; anything not yet described is None (placeholders).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "interrupted"})


@dataclass(frozen=True)
class DetectionSettings:
    """Durations of contract §5, in seconds; a source or a scenario may override them."""

    delivery_grace: float = 60
    orphan_grace: float = 60
    wake_timeout: float = 600
    stuck_after: float = 1800
    wake_start_timeout: float = 120
    dispatch_lag: float = 5
    source_silence: float = 900
    spawn_timeout: float = 120
    cancel_grace: float = 60

    @classmethod
    def from_overrides(cls, *overrides: dict | None) -> DetectionSettings:
        values = {}
        names = cls.__dataclass_fields__.keys()
        for layer in overrides:
            for key, value in (layer or {}).items():
                if key in names and value is not None:
                    values[key] = float(value)
        return cls(**values)


@dataclass(frozen=True)
class ReportView:
    """One `task.reported` event: the orchestrator's view of a task at `at`."""

    event_id: str
    at: datetime
    status: str
    work_state: str | None = None
    summary: str | None = None
    result_run: str | None = None
    error: str | None = None
    pending_child_runs: bool | None = None
    delivery: str | None = None  # "wake": the result reaches the parent only by a wake
    cause: str | None = None  # "restart": the orchestrator's restart recovery ended it
    delivery_record: str | None = None  # the orchestrator's own (T3's completionDelivery)
    settled_deliveries: int | None = None  # by the delegating run's cohort, then
    failure_class: str | None = None  # the orchestrator's class of the failure (usage_limit, ...)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


@dataclass(frozen=True)
class TaskView:
    id: str
    known: bool = True  # False until its task.delegated arrived
    parent_thread: str | None = None
    child_thread: str | None = None
    title: str = ""
    mode: str | None = None
    prompt: str | None = None
    client_request_id: str | None = None
    parent_run: str | None = None
    target_env: str | None = None
    requested_at: datetime | None = None
    follow_up_of: str | None = None
    delegated_at: datetime | None = None
    delegated_event: str | None = None
    env: str | None = None
    reports: tuple[ReportView, ...] = ()

    @cached_property
    def current_report(self) -> ReportView | None:
        """The latest report by `at`, ties broken by event id (contract §4)."""
        if not self.reports:
            return None
        return max(self.reports, key=lambda r: (r.at, r.event_id))


@dataclass(frozen=True)
class RunView:
    id: str
    thread: str
    ordinal: int | None = None  # None while only a later event of the run is known
    trigger_kind: str | None = None  # delegation|background|wake|restart|message|scheduled|other
    trigger_ref: str | None = None  # task id, item id, wake id or run id, by trigger_kind
    requested_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    status: str | None = None  # set by run.finished only
    summary: str | None = None
    error: str | None = None
    finish_cause: str | None = None  # "restart": cut by the orchestrator's restart
    failure_class: str | None = None  # the orchestrator's class of the failure (usage_limit, ...)
    last_activity_at: datetime | None = None
    env: str | None = None
    requested_event: str | None = None
    started_event: str | None = None
    finished_event: str | None = None
    activity_event: str | None = None  # the latest run.activity

    @property
    def finished(self) -> bool:
        return self.finished_event is not None


@dataclass(frozen=True)
class ItemView:
    """A background item (command, monitor, subagent, ...) of a thread."""

    id: str
    thread: str
    kind: str | None = None
    run: str | None = None  # as sent; see ownership for the fallback when absent
    label: str | None = None
    awaited: bool | None = None  # None = not said; only False excludes it
    started_at: datetime | None = None
    finished_at: datetime | None = None
    finish_status: str | None = None
    env: str | None = None
    started_event: str | None = None
    finished_event: str | None = None

    @property
    def finished(self) -> bool:
        return self.finished_event is not None


@dataclass(frozen=True)
class WakeView:
    id: str
    thread: str | None = None  # the target; None while only wake.delivered is known
    source_kind: str | None = None  # task|background|message|scheduled|manual
    source_task: str | None = None
    source_thread: str | None = None
    source_item: str | None = None
    summary: str | None = None
    outcome: str | None = None
    queued_at: datetime | None = None
    delivered_at: datetime | None = None
    delivered_run: str | None = None
    env: str | None = None
    queued_event: str | None = None
    delivered_event: str | None = None

    @property
    def delivered(self) -> bool:
        return self.delivered_event is not None


@dataclass(frozen=True)
class RejectionView:
    event_id: str
    thread: str
    tool: str
    code: str
    message: str = ""
    caller: str | None = None
    at: datetime | None = None


@dataclass(frozen=True)
class RequestView:
    """One `task.requested` event: a parent asked to delegate a task (issue 31)."""

    event_id: str
    parent_thread: str
    client_request_id: str
    at: datetime
    parent_run: str | None = None
    title: str | None = None


@dataclass(frozen=True)
class Finding:
    """A rule's conclusion: `kind` should be open on this subject now, because of `evidence`.

    `evidence` is {"events": [event ids that prove it], "text": words for an operator,
    ...values}. Rules return no finding for a subject where the kind should not be open.
    """

    kind: str
    subject_type: str  # "task" | "thread"
    subject_id: str
    evidence: dict = field(default_factory=dict, compare=False)


@dataclass
class Snapshot:
    """Everything known in one namespace (or the part of it a subject needs)."""

    tasks: dict[str, TaskView] = field(default_factory=dict)
    runs: dict[str, RunView] = field(default_factory=dict)
    items: dict[str, ItemView] = field(default_factory=dict)
    wakes: dict[str, WakeView] = field(default_factory=dict)
    rejections: list[RejectionView] = field(default_factory=list)
    requests: list[RequestView] = field(default_factory=list)
    threads: set[str] = field(default_factory=set)
    # The task ids whose flags are being decided (None: all): the rules judge these and
    # read the rest, which a snapshot loads only as their context.
    judged: frozenset[str] | None = None
    # Tasks known in the store and not loaded, because a wake that only sits beside the
    # subjects names them (loader.load_for_subjects): the rules read only that they are
    # known.
    known_beside: frozenset[str] = frozenset()
    # Derived values (ownership) computed once per snapshot; like the cached properties
    # below, valid only while the snapshot is not changed after it is built.
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def runs_by_thread(self) -> dict[str, list[RunView]]:
        by_thread: dict[str, list[RunView]] = {}
        for run in self.runs.values():
            by_thread.setdefault(run.thread, []).append(run)
        for runs in by_thread.values():
            runs.sort(key=lambda r: (r.ordinal is None, r.ordinal or 0, r.id))
        return by_thread

    @cached_property
    def items_by_thread(self) -> dict[str, list[ItemView]]:
        by_thread: dict[str, list[ItemView]] = {}
        for item in self.items.values():
            by_thread.setdefault(item.thread, []).append(item)
        return by_thread

    @cached_property
    def wakes_by_target(self) -> dict[str, list[WakeView]]:
        by_target: dict[str, list[WakeView]] = {}
        for wake in self.wakes.values():
            if wake.thread is not None:
                by_target.setdefault(wake.thread, []).append(wake)
        return by_target

    @cached_property
    def task_wakes_by_task(self) -> dict[str, list[WakeView]]:
        """Task id -> its task wakes with a known target and queue time, by queue time."""
        by_task: dict[str, list[WakeView]] = {}
        for wake in self.wakes.values():
            if wake.source_kind == "task" and wake.source_task and wake.thread and wake.queued_at:
                by_task.setdefault(wake.source_task, []).append(wake)
        for wakes in by_task.values():
            wakes.sort(key=lambda w: (w.queued_at, w.id))
        return by_task

    @cached_property
    def follow_ups_by_task(self) -> dict[str, list[TaskView]]:
        """Task id -> the known tasks that follow it up (`follow_up_of`)."""
        by_task: dict[str, list[TaskView]] = {}
        for task in self.tasks.values():
            if task.known and task.follow_up_of is not None:
                by_task.setdefault(task.follow_up_of, []).append(task)
        return by_task

    @cached_property
    def tasks_by_parent_thread(self) -> dict[str, list[TaskView]]:
        by_parent: dict[str, list[TaskView]] = {}
        for task in self.tasks.values():
            if task.parent_thread is not None:
                by_parent.setdefault(task.parent_thread, []).append(task)
        return by_parent
