"""never_delivered (T3 #12285): the child completes; the orchestrator says it hands
results by wakes alone and queues none (T3's cap of two completion wakes per cohort):
the parent, idle, never gets it."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..steps import started_report
from ..texts import Work

EPISODE = failing(
    "never_delivered",
    # Reported completed by an orchestrator that hands results by wakes alone
    # (`delivery: "wake"`), and no wake follows while the parent has no run under way.
    opens=("never_delivered",),
    paired=False,
    remote_only=False,
    # Another task's wake would start a run of a shared parent.
    own_parent=True,
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    final = work.final.format(ref=ref)
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(20, 90))
    fleet.finish_run(child, run, "completed", final)
    yield 0.2
    fleet.report(
        task,
        "completed",
        work_state="result_available",
        summary=final,
        result_run=run,
        delivery="wake",
    )
    fleet.falls_due(fleet.now + fleet.settings.delivery_grace)
