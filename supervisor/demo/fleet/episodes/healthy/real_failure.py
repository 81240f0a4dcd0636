"""real_failure: the child fails for a reason of the work (none of the passing faults'
words or codes), and the failure is handed to the parent: nothing to flag."""

from __future__ import annotations

from ...engine import Engine
from ...records import FleetTask, Plan, healthy
from ...steps import fail, started_report
from ...texts import REAL_FAILURES, Work

EPISODE = healthy("real_failure", weight=1, modes=("wait",))


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(30, 240))
    text = fleet.rng.choice(REAL_FAILURES).format(ref=ref)
    yield from fail(fleet, task, run, text, "the check failed")
