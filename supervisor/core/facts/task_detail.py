"""What an operator reads about one task: what the parent was given beside the latest
result, and one timeline of reports, runs, background items and wakes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from supervisor.core.facts import handover, ownership, reading
from supervisor.core.facts.handover import Handover
from supervisor.core.facts.snapshot import Snapshot, TaskView
from supervisor.core.models import Task


@dataclass
class TimelineEntry:
    """One line of a task's timeline, with why it belongs (or not) to the task."""

    at: datetime | None
    kind: str  # task.* | run.* | background.* | wake.* | action.*
    subject: str
    text: str = ""
    owned: bool | None = None  # runs and background items: the task's or not
    event_id: str | None = None
    why: str = ""
    marks: list[str] = field(default_factory=list)  # delivery | to-parent | action
    # Where it sorts, when not at `at`: after the operator action that caused it.
    order_at: datetime | None = None


@dataclass
class TaskDetail:
    task: TaskView
    latest_result: str | None
    latest_result_run: str | None
    latest_result_reached_parent: bool
    result_run: str | None
    handed: list[str]
    owned_runs: set[str]
    handover: Handover | None = None
    runs: list = field(default_factory=list)
    items: list = field(default_factory=list)
    wakes: list = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "latest_result": self.latest_result,
            "latest_result_run": self.latest_result_run,
            "latest_result_reached_parent": self.latest_result_reached_parent,
            "result_run": self.result_run,
            "handed_to_parent": self.handed,
            "handover": self.handover.as_json() if self.handover else None,
            "reports": [
                {
                    "event_id": r.event_id,
                    "at": r.at,
                    "status": r.status,
                    "work_state": r.work_state,
                    "summary": r.summary,
                    "result_run": r.result_run,
                    "error": r.error,
                    "pending_child_runs": r.pending_child_runs,
                    "cause": r.cause,
                    "delivery_record": r.delivery_record,
                    "settled_deliveries": r.settled_deliveries,
                    "failure_class": r.failure_class,
                }
                for r in self.task.reports
            ],
            "runs": [
                {
                    "id": r.id,
                    "thread": r.thread,
                    "ordinal": r.ordinal,
                    "owned": r.id in self.owned_runs,
                    "trigger": {"kind": r.trigger_kind, "ref": r.trigger_ref},
                    "requested_at": r.requested_at,
                    "started_at": r.started_at,
                    "finished_at": r.finished_at,
                    "status": r.status,
                    "summary": r.summary,
                    "error": r.error,
                    "failure_class": r.failure_class,
                    "env": r.env,
                }
                for r in self.runs
            ],
            "background_items": [
                {
                    "id": i.id,
                    "kind": i.kind,
                    "run": i.run,
                    "label": i.label,
                    "awaited": i.awaited,
                    "started_at": i.started_at,
                    "finished_at": i.finished_at,
                    "status": i.finish_status,
                }
                for i in self.items
            ],
            "wakes": [
                {
                    "id": w.id,
                    "thread": w.thread,
                    "source": {
                        "kind": w.source_kind,
                        "task": w.source_task,
                        "thread": w.source_thread,
                        "item": w.source_item,
                    },
                    "summary": w.summary,
                    "outcome": w.outcome,
                    "queued_at": w.queued_at,
                    "delivered_at": w.delivered_at,
                    "delivered_run": w.delivered_run,
                }
                for w in self.wakes
            ],
        }


def describe_task(task: Task, snap: Snapshot) -> TaskDetail:
    view = snap.tasks[task.task_id]
    child = ownership.child_thread(snap, view)
    owned = {run.id for run in ownership.owned_runs(snap, view)}
    # What the parent holds, as the operator sees it (core.facts.reading through
    # core.facts.handover): the panels, the API and the delivery flags' evidence show it;
    # the result run and the texts handed are the contract's words (§4).
    given = handover.read(snap, view)
    latest = given.latest
    result_run = reading.result_run_by_contract(snap, view)
    runs = snap.runs_by_thread.get(child, []) if child else []
    items = sorted(
        snap.items_by_thread.get(child, []) if child else [],
        key=lambda i: (i.started_at or ownership.LATEST, i.id),
    )
    wakes = sorted(
        (
            w
            for w in snap.wakes.values()
            if (child and w.thread == child)
            or (w.source_task == task.task_id)
            or (
                w.thread == view.parent_thread
                and w.source_kind == "manual"
                and w.source_task == task.task_id
            )
        ),
        key=lambda w: (w.queued_at or ownership.LATEST, w.id),
    )
    return TaskDetail(
        task=view,
        latest_result=latest.text if latest else None,
        latest_result_run=latest.run if latest else None,
        latest_result_reached_parent=latest is not None and latest.reached,
        result_run=result_run.id if result_run else None,
        handed=list(dict.fromkeys(h.text for h in reading.handed_by_contract(snap, view))),
        owned_runs=owned,
        runs=runs,
        items=items,
        wakes=wakes,
        handover=given,
    )


def timeline(snap: Snapshot, detail: TaskDetail, actions=()) -> list[TimelineEntry]:
    """The task's one timeline, in time order: its delegation and reports, its child's
    runs and background items (the task's or not, and why), wakes, and the operator
    `actions` asked on it (Action rows)."""
    view = detail.task
    entries = [
        TimelineEntry(
            view.delegated_at, "task.delegated", view.id, view.title, event_id=view.delegated_event
        )
    ]
    for r in view.reports:
        text = r.status + (f" ({r.work_state})" if r.work_state else "")
        if r.summary:
            text += f": {r.summary}"
        entries.append(TimelineEntry(r.at, "task.reported", view.id, text, event_id=r.event_id))
    for run in detail.runs:
        entries += _run_entries(snap, view, run, detail.owned_runs)
    for item in detail.items:
        entries += _item_entries(snap, item, detail.owned_runs)
    asked = _asked_at(actions)
    for wake in detail.wakes:
        caused = _wake_entries(view, wake)
        # An orchestrator's clock may run behind Supervisor's: the wake an action caused
        # sorts after the action (its entries moved together, in their own order), and
        # shows its own time.
        cause = asked.get(wake.id)
        first = min((e.at for e in caused if e.at is not None), default=None)
        if cause is not None and first is not None and first < cause:
            for entry in caused:
                if entry.at is not None:
                    entry.order_at = entry.at + (cause - first)
        entries += caused
    entries += [_action_entry(action) for action in actions]
    return sorted(entries, key=timeline_key)


def _asked_at(actions) -> dict[str, datetime]:
    """The wake each delivery or continue is recorded as, and when it was asked."""
    asked = {}
    for action in actions:
        if action.wake is not None:
            asked[action.wake] = action.created_at
    return asked


def timeline_key(entry: TimelineEntry) -> tuple:
    """The timeline's order, total: by time (undated last), then event id; kind and
    subject part entries without an event id (actions) at the same moment, so that a
    page of the timeline can start after any entry."""
    at = entry.order_at or entry.at or ownership.LATEST
    return (at, entry.event_id or "", entry.kind, entry.subject)


def _run_entries(snap, view: TaskView, run, owned: set[str]) -> list[TimelineEntry]:
    label = f"run {run.ordinal if run.ordinal is not None else '?'}"
    is_owned = run.id in owned
    why = ownership.owning(snap, view, run).words
    trigger = run.trigger_kind or "unknown trigger"
    return [
        TimelineEntry(at, kind, run.id, text, is_owned, event, why)
        for at, kind, text, event in (
            (
                run.requested_at,
                "run.requested",
                f"{label} requested ({trigger})",
                run.requested_event,
            ),
            (run.started_at, "run.started", f"{label} started", run.started_event),
            (
                run.finished_at,
                "run.finished",
                f"{label} {run.status}: {run.summary or ''}".strip(),
                run.finished_event,
            ),
        )
        if event
    ]


def _item_entries(snap, item, owned: set[str]) -> list[TimelineEntry]:
    name = item.label or item.id
    run_id = ownership.item_run_id(snap, item)
    is_owned = run_id in owned if run_id else False
    if item.awaited is False:
        why = f"started by run {run_id or '?'} with awaited: false (not waited for)"
    elif is_owned:
        why = f"owned: started by owned run {run_id}"
    else:
        why = f"not owned: started by run {run_id or '(unknown)'}"
    return [
        TimelineEntry(at, kind, item.id, f"{item.kind or 'item'} {verb}: {name}", is_owned, e, why)
        for at, kind, verb, e in (
            (item.started_at, "background.started", "started", item.started_event),
            (item.finished_at, "background.finished", "finished", item.finished_event),
        )
        if e
    ]


def _wake_entries(view: TaskView, wake) -> list[TimelineEntry]:
    why, marks = "", []
    if (
        wake.source_kind == "manual"
        and wake.thread is not None
        and wake.thread == view.child_thread
    ):
        why = "a continue by hand (manual wake): the run it wakes is the task's"
    elif wake.source_kind == "manual":
        why, marks = "delivery by hand (manual wake)", ["delivery"]
    elif wake.thread is not None and wake.thread == view.parent_thread:
        why, marks = "to the parent", ["to-parent"]
    elif wake.thread is not None and wake.thread == view.child_thread:
        why = "wakes the child"
    entries = []
    if wake.queued_event:
        text = (
            f"wake to {wake.thread} ({wake.source_kind}"
            f"{', ' + wake.outcome if wake.outcome else ''}): {wake.summary or ''}".strip()
        )
        entries.append(
            TimelineEntry(
                wake.queued_at, "wake.queued", wake.id, text, None, wake.queued_event, why, marks
            )
        )
    if wake.delivered_event:
        text = "delivered" + (f" into {wake.delivered_run}" if wake.delivered_run else "")
        entries.append(
            TimelineEntry(
                wake.delivered_at,
                "wake.delivered",
                wake.id,
                text,
                None,
                wake.delivered_event,
                why,
                list(marks),
            )
        )
    return entries


def _action_entry(action) -> TimelineEntry:
    return TimelineEntry(
        action.created_at,
        f"action.{action.kind}",
        str(action.pk),
        f"{action.kind} asked by {action.actor_name or 'someone'}"
        + (f" for run {action.run_id}" if action.run_id else "")
        + (f": {action.reason}" if action.reason else ""),
        why=f"{action.state}" + (f" ({action.last_error})" if action.last_error else ""),
        marks=["action"],
    )
