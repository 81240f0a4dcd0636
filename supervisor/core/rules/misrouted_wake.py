"""misrouted_wake: a task wake of a known task T went to a thread that is neither T's
parent thread nor the parent thread of a follow-up of T, and T's parent still lacks what
it carried (Codex #32203, hermes #69127, Claude Code #78313: a completion delivered to
another conversation). `orphan_wake` covers wakes naming a task that is not known.

Raised on T `delivery_grace` after such a wake was queued (time for a follow-up's
delegation, or the result's own wake to the parent, to arrive), unless T's parent holds
the result (`core.facts.reading`): T's latest result reached the parent as the operator
sees it, as the task page reads it; when T has no latest result, a task wake of T was
delivered to the parent or a delivery by hand of T was made (its "delivered" meaning).
A wake that carried a text the parent already holds (a copy sent astray) and a progress
notice (`outcome: "updated"`) do not count. Resolves when T's latest result reaches the
parent (or, without one, on such a wake or delivery by hand)."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.contract.times import after
from supervisor.core.facts import reading
from supervisor.core.facts.ownership import judged_tasks
from supervisor.core.facts.snapshot import DetectionSettings, Finding, Snapshot, TaskView, WakeView

from .wake_deadlines import Deadline, earliest_by_subject, passed_by_subject

KIND = "misrouted_wake"


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    passed = passed_by_subject(_due(snap, settings), now)
    return [_finding(snap, snap.tasks[subject[1]], wakes) for subject, wakes in passed.items()]


def due_times(snap: Snapshot, settings: DetectionSettings, now: datetime) -> dict:
    """(subject type, id) -> the earliest later time a wake there turns this kind on."""
    return earliest_by_subject(_due(snap, settings), now)


def _due(snap: Snapshot, settings: DetectionSettings) -> list[Deadline]:
    due = []
    for task in judged_tasks(snap):
        for wake in astray(snap, task):
            due.append((after(wake.queued_at, settings.delivery_grace), ("task", task.id), wake))
    return due


def allowed_targets(snap: Snapshot, task: TaskView) -> set[str]:
    """Where a task wake of T may go: T's parent thread, and the parent thread of each
    known task that follows T up (the orchestrator hands the child's later work there)."""
    follow_ups = snap.follow_ups_by_task.get(task.id, [])
    return {t.parent_thread for t in [task, *follow_ups] if t.parent_thread is not None}


def astray(snap: Snapshot, task: TaskView) -> list[WakeView]:
    """T's task wakes to a thread it may not go to whose text the parent lacks, while
    T's parent does not hold T's result; by queue time."""
    if task.parent_thread is None:
        return []
    allowed = allowed_targets(snap, task)
    wakes = [
        wake
        for wake in snap.task_wakes_by_task.get(task.id, [])
        if wake.thread not in allowed and wake.outcome != "updated"
    ]
    if not wakes or parent_holds_result(snap, task):
        return []
    return [
        wake
        for wake in wakes
        if not reading.holds_text_as_operator_sees_it(snap, task, wake.summary)
    ]


def parent_holds_result(snap: Snapshot, task: TaskView) -> bool:
    """T's parent holds T's result, as the reading says it (as the operator sees it;
    without a latest result, as delivered)."""
    return reading.holds_result_as_operator_sees_it(snap, task)


def _finding(snap: Snapshot, task: TaskView, wakes: list[WakeView]) -> Finding:
    wakes = sorted(wakes, key=lambda w: (w.queued_at, w.id))
    targets = list(dict.fromkeys(w.thread for w in wakes))
    latest = reading.latest_result_as_operator_sees_it(snap, task)
    reach = reading.latest_reach_as_operator_sees_it(snap, task)
    if reach is not None:
        lacks = f"the task's latest result has not reached the parent: {reach.how}."
    else:
        lacks = "no wake or delivery by hand of the task has reached the parent."
    return Finding(
        KIND,
        "task",
        task.id,
        {
            "events": [w.queued_event for w in wakes if w.queued_event],
            "text": (
                f"Wake {', '.join(w.id for w in wakes)} of this task went to "
                f"{', '.join(targets)}, not to its parent thread {task.parent_thread}; " + lacks
            ),
            "wakes": [w.id for w in wakes],
            "targets": targets,
            "parent_thread": task.parent_thread,
            "carried": [w.summary for w in wakes],
            "latest_result": latest.summary if reach is not None else None,
        },
    )
