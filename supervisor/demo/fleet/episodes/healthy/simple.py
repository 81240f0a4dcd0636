"""simple: the child works, completes, and its result is handed to the parent."""

from __future__ import annotations

from ...engine import Engine
from ...records import FleetTask, Plan, healthy
from ...steps import complete, started_report
from ...texts import Work

EPISODE = healthy("simple", weight=4, modes=("wait", "async"), may_be_remote=True)


def flow(
    fleet: Engine,
    task: FleetTask,
    run: str,
    work: Work,
    ref: str,
    plan: Plan,
    *,
    span: float | None = None,
    named_task: str | None = None,
):
    """`span`: how long the child works (drawn when not given); `named_task`: the task id
    the result's wake names, when not this task's (orphan_wake)."""
    child = task.child_thread
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, span or fleet.span(40, 300))
    final = work.final.format(ref=ref)
    fleet.finish_run(child, run, "completed", final)
    yield from complete(fleet, task, run, final, named_task=named_task)
