"""completed_on_failure (t3code PR #3549): the child's run is interrupted part-way; the
orchestrator reports the task completed with the run's partial text and hands it to the
parent as the result."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..steps import complete, started_report
from ..texts import Work

EPISODE = failing(
    "completed_on_failure",
    # Its only run is interrupted and the task is reported completed with the run's
    # partial text, handed to the parent: nothing later makes it good.
    opens=("completed_on_failure",),
    paired=False,
    remote_only=False,
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(10, 30))
    partial = work.interim.format(ref=ref)
    fleet.finish_run(child, run, "interrupted", partial, "interrupted by the user")
    yield from complete(fleet, task, run, partial)
