"""cancel_not_propagated (kilocode #11758): the orchestrator reports the task cancelled,
but the cancel never reaches the child: its run goes on working a while, then hangs,
never ended."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..steps import started_report
from ..texts import Work

EPISODE = failing(
    "cancel_not_propagated",
    # Reported cancelled while its only run goes on working and never ends: after
    # `cancel_grace` the cancel did not reach the child.
    opens=("cancel_not_propagated",),
    paired=False,
    remote_only=False,
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    yield from started_report(fleet, task)
    # Short, so that the flag (`cancel_grace` after the cancel) comes early in a demo.
    yield from fleet.work(child, run, fleet.span(4, 12))
    fleet.report(task, "cancelled")
    fleet.falls_due(fleet.now + fleet.settings.cancel_grace)
    yield from fleet.work(child, run, fleet.span(20, 60))
    fleet.activity(child, run, f"Bash: {work.command}")
