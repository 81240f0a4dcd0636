"""transient_failure (seed 002): run 1 fails on a passing provider fault and the task is
reported failed; a message starts run 2 of the child, which finishes the work and tells
the parent by message."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..steps import hand_to_parent, started_report
from ..texts import TRANSIENT_ERRORS, Work

EPISODE = failing(
    "transient_failure",
    # Reported failed on a 403-behind-Cloudflare/529/... text (transient_failure) while a
    # later run of the child thread finishes completed (failed_while_running). That run
    # is message-started, so not owned: the latest result stays the handed failure.
    opens=("failed_while_running", "transient_failure"),
    paired=False,
    remote_only=False,
    modes=("async", "wait"),
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(30, 200))
    error = fleet.rng.choice(TRANSIENT_ERRORS)
    fleet.finish_run(child, run, "failed", error, error)
    yield 0.1
    fleet.report(
        task,
        "failed",
        work_state="result_available",
        summary=error,
        result_run=run,
        error=error,
    )
    yield 0.1
    yield from hand_to_parent(fleet, task, error, "failed")
    yield fleet.span(10, 60)
    again = fleet.request_run(child, {"kind": "message"})
    yield 0.05
    fleet.start_run(child, again)
    yield from fleet.work(child, again, fleet.span(60, 300))
    final = work.final.format(ref=ref)
    fleet.finish_run(child, again, "completed", final)
    yield 0.2
    wake = fleet.new_wake(task.parent_thread)
    fleet.queue_wake(wake, task.parent_thread, {"kind": "message"}, final)
    run_p = yield from fleet.woken_run(task.parent_thread, wake)
    fleet.later(fleet.end_parent_run(task.parent_thread, run_p, "Read the message."), 0)
