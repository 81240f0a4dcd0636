"""stuck: the child's run works a while, then hangs: no event from it ever again, so
once `stuck_after` has passed since its last activity nothing owned happened."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..steps import started_report
from ..texts import Work

EPISODE = failing(
    "stuck",
    # Running, and its only run hangs after its last activity: nothing owned happens
    # for `stuck_after`.
    opens=("stuck",),
    paired=False,
    remote_only=False,
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    yield from started_report(fleet, task)
    # Short, so that the hang (and the flag) comes early in a demo.
    yield from fleet.work(child, run, fleet.span(20, 60))
    fleet.activity(child, run, f"Bash: {work.command}")
    fleet.falls_due(fleet.now + fleet.settings.stuck_after)
