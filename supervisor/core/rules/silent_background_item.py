"""silent_background_item: an owned background item still shows as open, yet nothing at all
has happened on its thread for `stuck_after` (T3 #12502, Claude Code #86200: a monitor or
shell shown as working long after it exited).

Raised on T whose current report is not terminal (or that has none) when an owned
background item that T waits on (not `awaited: false`) is unfinished and no event naming
its thread (a run of it requested, started, active or finished; an item of it started or
finished; a wake queued to it or delivered; a task delegated from or to it) has come for
`stuck_after`. It resolves when the item finishes, when anything happens on its thread,
or when T's report becomes terminal.

From the same moment `stuck` stops counting the item as a wait (`waited_until`): an item
that may never end can no longer stop T's idle clock for good."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.contract.times import after
from supervisor.core.facts.ownership import awaited, owned_items
from supervisor.core.facts.snapshot import DetectionSettings, Finding, ItemView, Snapshot, TaskView

from .task_deadlines import coming, opened

KIND = "silent_background_item"


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    return opened(snap, settings, now, _due)


def due_times(snap: Snapshot, settings: DetectionSettings, now: datetime) -> dict:
    return coming(snap, settings, now, _due)


def last_on_thread(snap: Snapshot, thread: str) -> tuple[datetime, str | None] | None:
    """The latest time anything happened on `thread` (any event naming it), with that
    event's id: None when nothing is known of it."""
    index = snap.memo.get("last_on_thread")
    if index is None:
        index = snap.memo["last_on_thread"] = _last_by_thread(snap)
    return index.get(thread)


def waited_until(snap: Snapshot, settings: DetectionSettings, item: ItemView) -> datetime | None:
    """Until when T waits on an unfinished item: `stuck_after` after the last thing that
    happened on its thread (from then on it is silent); the item's end once it finished."""
    if item.finished:
        return item.finished_at
    last = last_on_thread(snap, item.thread)
    since = max(last[0], item.started_at) if last else item.started_at
    return after(since, settings.stuck_after) if since is not None else None


def _due(snap: Snapshot, settings: DetectionSettings, task: TaskView):
    report = task.current_report
    if report is not None and report.terminal:
        return None
    open_items = [
        item
        for item in owned_items(snap, task)
        if awaited(item) and not item.finished and item.started_at is not None
    ]
    if not open_items:
        return None
    # Every owned item is on the child thread, so all fall silent at the same moment.
    when = max(waited_until(snap, settings, item) for item in open_items)
    last = last_on_thread(snap, open_items[0].thread)
    quiet_since, quiet_event = last if last else (open_items[0].started_at, None)
    names = ", ".join(_name(item) for item in open_items)
    events = [item.started_event for item in open_items] + [quiet_event]
    return when, Finding(
        KIND,
        "task",
        task.id,
        {
            "events": sorted({e for e in events if e is not None}),
            "text": (
                f"Background item {names} still shows as running, and nothing has happened "
                f"on the child thread since {quiet_since.isoformat()}: it may have ended "
                "without saying so."
            ),
            "items": [item.id for item in open_items],
            "quiet_since": quiet_since.isoformat(),
        },
    )


def _name(item: ItemView) -> str:
    return f"{item.id} ({item.label})" if item.label else item.id


def _last_by_thread(snap: Snapshot) -> dict[str, tuple[datetime, str | None]]:
    latest: dict[str, tuple[datetime, str | None]] = {}

    def seen(thread: str | None, at: datetime | None, event: str | None) -> None:
        if thread is None or at is None:
            return
        if thread not in latest or (at, event or "") > (latest[thread][0], latest[thread][1] or ""):
            latest[thread] = (at, event)

    for run in snap.runs.values():
        seen(run.thread, run.requested_at, run.requested_event)
        seen(run.thread, run.started_at, run.started_event)
        seen(run.thread, run.last_activity_at, run.activity_event)
        seen(run.thread, run.finished_at, run.finished_event)
    for item in snap.items.values():
        seen(item.thread, item.started_at, item.started_event)
        seen(item.thread, item.finished_at, item.finished_event)
    for wake in snap.wakes.values():
        seen(wake.thread, wake.queued_at, wake.queued_event)
        seen(wake.thread, wake.delivered_at, wake.delivered_event)
        seen(wake.source_thread, wake.queued_at, wake.queued_event)
    for task in snap.tasks.values():
        seen(task.parent_thread, task.delegated_at, task.delegated_event)
        seen(task.child_thread, task.delegated_at, task.delegated_event)
    return latest
