"""left_by_restart (T3 #7314): the child's run works a while; the orchestrator restarts
and its recovery cancels the run; the task stays reported running and nothing resumes
it."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..steps import started_report
from ..texts import Work

EPISODE = failing(
    "left_by_restart",
    # Its child's run is cut by a restart (`cause: "restart"`) while it is reported
    # running; nothing owned happens after, so `stuck` follows `stuck_after` later.
    opens=("left_by_restart", "stuck"),
    paired=False,
    remote_only=False,
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(20, 60))
    fleet.finish_run(child, run, "cancelled", "", cause="restart")
    fleet.falls_due(fleet.now + fleet.settings.stuck_after)
