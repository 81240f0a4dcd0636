"""duplicate_delegation: the same work was delegated again while the first child went on."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.facts.ownership import child_thread, judged_tasks, normalized, run_name
from supervisor.core.facts.snapshot import DetectionSettings, Finding, RunView, Snapshot, TaskView

KIND = "duplicate_delegation"


def findings(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    found = [_finding(snap, task) for task in judged_tasks(snap)]
    return [finding for finding in found if finding is not None]


def _finding(snap: Snapshot, later: TaskView) -> Finding | None:
    """Raised on the later task; the delegations' `at` decide which is later, never arrival."""
    if later.follow_up_of is not None or later.delegated_at is None:
        return None
    for earlier in _same_work_before(snap, later):
        busy = _busy_run(snap, earlier, later.delegated_at)
        if busy is None:
            continue
        events = [earlier.delegated_event, later.delegated_event]
        return Finding(
            KIND,
            "task",
            later.id,
            {
                "events": [e for e in events if e is not None],
                "text": (
                    f"The same task ({later.title!r}) was already delegated as {earlier.id}, "
                    f"whose child was still working ({run_name(busy)}) when this one was delegated."
                ),
                "earlier_task": earlier.id,
                "busy_run": busy.id,
            },
        )
    return None


def _same_work_before(snap: Snapshot, later: TaskView) -> list[TaskView]:
    """Earlier delegations from the same parent with the same title and prompt, to another
    child thread, neither a follow-up; earliest first."""
    later_child = child_thread(snap, later)
    if later_child is None:
        return []  # "another child thread" cannot be told yet
    same = [
        task
        for task in snap.tasks_by_parent_thread.get(later.parent_thread or "", [])
        if task.known
        and task.id != later.id
        and task.follow_up_of is None
        and task.delegated_at is not None
        and task.delegated_at < later.delegated_at
        and normalized(task.title) == normalized(later.title)
        and normalized(task.prompt or "") == normalized(later.prompt or "")
        and child_thread(snap, task) not in (None, later_child)
    ]
    return sorted(same, key=lambda t: (t.delegated_at, t.id))


def _busy_run(snap: Snapshot, earlier: TaskView, at: datetime) -> RunView | None:
    """A run of the earlier child thread unfinished at `at` or requested after it: one that
    had not finished by `at`, whenever it was requested."""
    for run in snap.runs_by_thread.get(child_thread(snap, earlier) or "", []):
        if not run.finished or (run.finished_at is not None and run.finished_at > at):
            return run
    return None
