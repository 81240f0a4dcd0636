"""retry: a passing provider error ends run 1; a restart continues it and succeeds."""

from __future__ import annotations

from ...engine import Engine
from ...records import FleetTask, Plan, healthy
from ...steps import complete, started_report
from ...texts import TRANSIENT_ERRORS, Work

EPISODE = healthy("retry", weight=2, modes=("wait", "async"), may_be_remote=True)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(20, 150))
    error = fleet.rng.choice(TRANSIENT_ERRORS)
    fleet.finish_run(child, run, "failed", error, error)
    yield fleet.span(5, 30)
    again = fleet.request_run(child, {"kind": "restart", "run": run})
    yield 0.05
    fleet.start_run(child, again)
    yield from fleet.work(child, again, fleet.span(30, 200))
    final = work.final.format(ref=ref)
    fleet.finish_run(child, again, "completed", final)
    yield from complete(fleet, task, again, final)
