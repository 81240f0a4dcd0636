"""account_limit (Claude Code #83412, Roo #7780): the child's run ends on the account's
usage limit (T3's failure class usage_limit); the task is reported failed and the
failure handed to the parent."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..steps import fail, started_report
from ..texts import ACCOUNT_LIMITS, Work

EPISODE = failing(
    "account_limit",
    # Reported failed on a usage limit's text (failure class usage_limit): not a passing
    # fault, so no transient_failure, whatever status code the text carries.
    opens=("account_limit",),
    paired=False,
    remote_only=False,
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(10, 30))
    text = f"Stopped on {ref}: {fleet.rng.choice(ACCOUNT_LIMITS)}"
    yield from fail(fleet, task, run, text, text, failure_class="usage_limit")
