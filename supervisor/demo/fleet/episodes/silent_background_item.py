"""silent_background_item (T3 #12502): run 1 starts an awaited monitor and ends waiting
on it; the monitor never says it ended and nothing happens on the child thread again."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..steps import started_report
from ..texts import Work

EPISODE = failing(
    "silent_background_item",
    # Waiting on an awaited monitor that never ends, with nothing on the child thread:
    # silent after `stuck_after`; then `stuck`'s idle clock runs, `stuck_after` more.
    opens=("silent_background_item", "stuck"),
    paired=False,
    remote_only=False,
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(20, 60))
    fleet.background(child, run, "monitor", f"Monitor: {work.command}", True)
    yield fleet.span(1, 10)
    fleet.finish_run(child, run, "completed", work.interim.format(ref=ref))
    yield 0.2
    fleet.report(task, "waiting", work_state="waiting_for_children")
    # Silent `stuck_after` after the run's end; `stuck` another `stuck_after` on.
    fleet.falls_due(fleet.now + 2 * fleet.settings.stuck_after)
