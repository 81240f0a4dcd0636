"""remote_monitor (seed 001): a remote monitor's end wakes run 2 of the child, which
answers on the remote environment; the origin has finalized the task on run 1's text,
and run 2's answer never reaches the parent."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..steps import hand_to_parent
from ..texts import Work
from .healthy.background import item_ended, item_wakes

EPISODE = failing(
    "remote_monitor",
    # As stale_finalize: a monitor started by owned run 1 (not `awaited: false`) owns the
    # run its end wakes, whose answer never reaches the parent.
    opens=("premature_completion", "stale_result", "undelivered_result"),
    paired=False,
    remote_only=True,
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    label = f"Monitor: {work.command}"
    interim = work.interim.format(ref=ref)
    final = work.final.format(ref=ref)
    item, wake, notice = yield from item_ended(
        fleet, task, run, work, ref, "monitor", None, label, running=True
    )
    yield 0.05
    run2 = yield from item_wakes(fleet, child, item, wake, notice)
    yield from fleet.work(child, run2, fleet.span(2, 120))
    fleet.finish_run(child, run2, "completed", final)
    # The origin finalizes on run 1's text, ignoring the monitor's wake run.
    yield fleet.uniform(0.2, 1.5)
    fleet.report(task, "completed", work_state="result_available", summary=interim, result_run=run)
    yield 0.05
    yield from hand_to_parent(fleet, task, interim, "completed")
