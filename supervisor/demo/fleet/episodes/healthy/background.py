"""background: run 1 starts a background command and ends waiting on it; the command's
end wakes run 2, and the task completes with run 2's result.

Its first part, `item_ended`, is shared: monitor runs it with a monitor, and the
failures stale_finalize and remote_monitor are this shape finalized too early."""

from __future__ import annotations

from ...engine import Engine
from ...records import FleetTask, Plan, healthy
from ...steps import complete, started_report
from ...texts import Work

EPISODE = healthy("background", weight=3, may_be_remote=True)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    yield from then_run_2(fleet, task, run, work, ref, "command", True, work.command)


def then_run_2(
    fleet: Engine,
    task: FleetTask,
    run: str,
    work: Work,
    ref: str,
    kind: str,
    awaited: bool | None,
    label: str,
):
    """The healthy way: the item's end wakes run 2, which finishes the work, and the
    task completes with its result."""
    child = task.child_thread
    final = work.final.format(ref=ref)
    item, wake, notice = yield from item_ended(fleet, task, run, work, ref, kind, awaited, label)
    yield 0.05
    run2 = yield from item_wakes(fleet, child, item, wake, notice)
    yield from fleet.work(child, run2, fleet.span(2, 120))
    fleet.finish_run(child, run2, "completed", final)
    yield from complete(fleet, task, run2, final)


def item_ended(
    fleet: Engine,
    task: FleetTask,
    run: str,
    work: Work,
    ref: str,
    kind: str,
    awaited: bool | None,
    label: str,
    *,
    running: bool = False,
):
    """Run 1 works, starts the item and ends with its interim text; the task is reported
    waiting on it (or still `running`), and the item ends. Returns the item, the wake its
    end will queue on the child thread, and that wake's notice."""
    child = task.child_thread
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(15, 90))
    item = fleet.background(child, run, kind, label, awaited)
    yield fleet.span(1, 10)
    fleet.finish_run(child, run, "completed", work.interim.format(ref=ref))
    yield 0.2
    if running:
        fleet.report(task, "running", work_state="working")
    else:
        fleet.report(task, "waiting", work_state="waiting_for_children")
    # A healthy item ends before its thread has been quiet for `stuck_after`
    # (silent_background_item): one draw either way, so the stream is as before.
    yield min(fleet.span(60, 600), 0.8 * fleet.settings.stuck_after)
    fleet.item_finished(child, item, "completed")
    wake = fleet.new_wake(child)
    notice = f"Monitor {label!r} finished" if kind == "monitor" else f"{label} exited 0"
    return item, wake, notice


def item_wakes(fleet: Engine, thread: str, item: str, wake: str, notice: str):
    """The item's end queues `wake` on its thread, which starts a run; returns the run."""
    fleet.queue_wake(wake, thread, {"kind": "background", "item": item}, notice, "completed")
    return (yield from fleet.woken_run(thread, wake))
