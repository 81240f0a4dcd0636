"""Terse builders of rule snapshots for the pure tests.

Times are seconds after T0; event ids are derived from the view's id, e.g. "r1/finished".
By default a task "task:t" is delegated from "thread:parent" to "thread:child".
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from supervisor.core.facts.snapshot import (
    DetectionSettings,
    ItemView,
    RejectionView,
    ReportView,
    RequestView,
    RunView,
    Snapshot,
    TaskView,
    WakeView,
)

T0 = datetime(2026, 11, 5, 22, 40, tzinfo=UTC)
TASK = "task:t"
PARENT = "thread:parent"
CHILD = "thread:child"
SETTINGS = DetectionSettings()


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def minutes(n: float) -> float:
    return n * 60


def task(
    id: str = TASK,
    *,
    parent: str | None = PARENT,
    child: str | None = CHILD,
    delegated: float = 0,
    reports: tuple[ReportView, ...] | list[ReportView] = (),
    requested: float | None = None,
    **fields,
) -> TaskView:
    return TaskView(
        id=id,
        parent_thread=parent,
        child_thread=child,
        delegated_at=at(delegated),
        delegated_event=f"{id}/delegated",
        requested_at=at(requested) if requested is not None else None,
        reports=tuple(reports),
        **fields,
    )


def unknown_task(id: str, *reports: ReportView) -> TaskView:
    """A task only referenced (reported, named by a wake) but never delegated."""
    return TaskView(id=id, known=False, reports=reports)


def report(status: str, when: float, *, id: str | None = None, **fields) -> ReportView:
    return ReportView(
        event_id=id or f"report/{status}@{when:g}", at=at(when), status=status, **fields
    )


def run(
    id: str,
    ordinal: int | None,
    *,
    thread: str = CHILD,
    trigger: tuple[str, str | None] | None = ("delegation", TASK),
    requested: float | None = 0,
    started: float | None = None,
    finished: float | None = None,
    status: str = "completed",
    summary: str | None = None,
    activity: float | None = None,
    cause: str | None = None,
) -> RunView:
    """A run; `requested=None` makes a placeholder known only from its later events."""
    started = requested if started is None else started
    return RunView(
        id=id,
        thread=thread,
        ordinal=ordinal if requested is not None else None,
        trigger_kind=trigger[0] if trigger and requested is not None else None,
        trigger_ref=trigger[1] if trigger and requested is not None else None,
        requested_at=at(requested) if requested is not None else None,
        requested_event=f"{id}/requested" if requested is not None else None,
        started_at=at(started) if started is not None else None,
        started_event=f"{id}/started" if started is not None else None,
        finished_at=at(finished) if finished is not None else None,
        finished_event=f"{id}/finished" if finished is not None else None,
        status=status if finished is not None else None,
        summary=summary if finished is not None else None,
        last_activity_at=at(activity) if activity is not None else None,
        activity_event=f"{id}/activity" if activity is not None else None,
        finish_cause=cause if finished is not None else None,
    )


def item(
    id: str,
    *,
    run: str | None = "r1",
    thread: str = CHILD,
    started: float = 0,
    finished: float | None = None,
    awaited: bool | None = None,
) -> ItemView:
    return ItemView(
        id=id,
        thread=thread,
        run=run,
        awaited=awaited,
        started_at=at(started),
        started_event=f"{id}/started",
        finished_at=at(finished) if finished is not None else None,
        finished_event=f"{id}/finished" if finished is not None else None,
    )


def wake(
    id: str,
    *,
    to: str = PARENT,
    source: tuple[str, str | None] = ("task", TASK),
    source_thread: str | None = CHILD,
    summary: str | None = None,
    queued: float = 0,
    delivered: float | None = None,
    outcome: str | None = None,
) -> WakeView:
    """A wake; `source` is (kind, task id or item id): ("task", T), ("background", I),
    ("manual", T), ("message", None)..."""
    kind, ref = source
    return WakeView(
        id=id,
        thread=to,
        source_kind=kind,
        source_task=ref if kind in ("task", "manual") else None,
        source_thread=source_thread if kind == "task" else None,
        source_item=ref if kind == "background" else None,
        summary=summary,
        outcome=outcome,
        queued_at=at(queued),
        queued_event=f"{id}/queued",
        delivered_at=at(delivered) if delivered is not None else None,
        delivered_event=f"{id}/delivered" if delivered is not None else None,
    )


def rejection(
    id: str,
    *,
    thread: str = PARENT,
    tool: str = "delegate_task",
    code: str = "parent_not_active",
    when: float = 0,
    caller: str | None = None,
) -> RejectionView:
    return RejectionView(
        event_id=id,
        thread=thread,
        tool=tool,
        code=code,
        message="refused",
        caller=caller,
        at=at(when),
    )


def request(
    request_id: str = "req-1",
    *,
    id: str | None = None,
    thread: str = PARENT,
    when: float = 0,
    title: str | None = None,
    parent_run: str | None = None,
) -> RequestView:
    """A `task.requested` on `thread`: its client request id is `request_id`."""
    return RequestView(
        event_id=id or f"{request_id}/requested@{when:g}",
        parent_thread=thread,
        client_request_id=request_id,
        at=at(when),
        parent_run=parent_run,
        title=title,
    )


def snapshot(*views) -> Snapshot:
    snap = Snapshot()
    for view in views:
        if isinstance(view, TaskView):
            snap.tasks[view.id] = view
        elif isinstance(view, RunView):
            snap.runs[view.id] = view
        elif isinstance(view, ItemView):
            snap.items[view.id] = view
        elif isinstance(view, WakeView):
            snap.wakes[view.id] = view
        elif isinstance(view, RejectionView):
            snap.rejections.append(view)
        elif isinstance(view, RequestView):
            snap.requests.append(view)
        else:
            raise TypeError(f"not a snapshot view: {view!r}")
    return snap


def subjects(findings) -> list[str]:
    """The subject ids of findings, for terse assertions."""
    return [finding.subject_id for finding in findings]
