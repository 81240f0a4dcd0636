"""monitor_unawaited: a monitor started with `awaited: false` outlives the task: it owes
no work, and the run its progress notice wakes is not the task's."""

from __future__ import annotations

from ...engine import Engine
from ...records import FleetTask, Plan, healthy
from ...steps import complete, started_report
from ...texts import Work

EPISODE = healthy("monitor_unawaited", weight=1)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    final = work.final.format(ref=ref)
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(30, 200))
    item = fleet.background(child, run, "monitor", f"Monitor: watch {work.slug}", False)
    yield fleet.span(5, 40)
    fleet.finish_run(child, run, "completed", final)
    yield from complete(fleet, task, run, final)
    yield fleet.span(60, 300)
    wake = fleet.new_wake(child)
    fleet.queue_wake(
        wake,
        child,
        {"kind": "background", "item": item},
        f"Monitor: {work.slug} still healthy ({ref})",
        "updated",
    )
    run2 = yield from fleet.woken_run(child, wake)
    yield from fleet.work(child, run2, fleet.span(5, 40))
    fleet.finish_run(child, run2, "completed", f"Noted: {work.slug} still healthy ({ref}).")
    yield fleet.span(30, 300)
    fleet.item_finished(child, item, "cancelled")
