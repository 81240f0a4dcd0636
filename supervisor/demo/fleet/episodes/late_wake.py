"""late_wake: the child completes and its result's wake is queued at once; the parent
run that delegated stays busy, and the wake is delivered only when that run ends."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..steps import delegated, started_report
from ..texts import Work

EPISODE = failing(
    "late_wake",
    # Completed and handed at once; only the wake's delivery is late (`passing`).
    opens=(),
    # The wake is delivered `wake_timeout` + 10-30 s after it was queued, when the busy
    # parent run ends.
    passing=("late_wake",),
    paired=False,
    remote_only=False,
)


def after_turn(fleet: Engine, plan: Plan, work: Work, ref: str, prun: str):
    """One delegation, whose parent run stays busy (it neither waits nor ends)."""
    yield from delegated(fleet, plan, work, ref, prun, flow, EPISODE, busy=True)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    final = work.final.format(ref=ref)
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(20, 120))
    fleet.finish_run(child, run, "completed", final)
    yield 0.2
    fleet.report(task, "completed", work_state="result_available", summary=final, result_run=run)
    yield 0.1
    wake = fleet.new_wake(task.parent_thread)
    source = {"kind": "task", "task": task.task, "thread": child}
    fleet.queue_wake(wake, task.parent_thread, source, final, "completed")
    busy = fleet.busy.pop(task.task, None)
    if busy is not None:
        fleet.later(busy_parent(fleet, task, busy, wake), 0)


def busy_parent(fleet: Engine, task: FleetTask, run: str, wake: str):
    """The busy parent run ends `wake_timeout` + 10-30 s after the wake was queued;
    the wake then starts a new run of the parent."""
    parent = task.parent_thread
    timeout = fleet.settings.wake_timeout
    fleet.falls_due(fleet.now + timeout)
    late, seen = fleet.uniform(10, 30), fleet.uniform(2, 6)
    # Activity after the wake fell due: a replay (which looks at event times only)
    # sees the flag open before the delivery resolves it.
    yield from fleet.work(parent, run, timeout + seen)
    fleet.activity(parent, run, "Bash: gh run watch")
    yield late - seen
    if run in fleet.threads[parent].active:
        fleet.finish_run(parent, run, "completed", f"Checked CI; read {task.title!r}.")
    yield 0.2
    woken = yield from fleet.woken_run(parent, wake)
    fleet.later(fleet.end_parent_run(parent, woken, f"Noted the result of {task.title!r}."), 0)
