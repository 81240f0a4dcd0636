"""misrouted_wake (Codex #32203): the child completes; the orchestrator reports it
without a text (results go by wake) and queues the completion wake to another lead's
thread, which takes it: the parent never gets the result."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..steps import started_report
from ..texts import Work

EPISODE = failing(
    "misrouted_wake",
    # Completed with no text on the report (results go by wake), and the one wake of its
    # result goes to another lead's thread, which takes it: once `delivery_grace` has
    # passed, the parent lacks the result.
    opens=("misrouted_wake",),
    paired=False,
    remote_only=False,
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    final = work.final.format(ref=ref)
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(10, 30))
    fleet.finish_run(child, run, "completed", final)
    yield 0.2
    fleet.report(task, "completed", work_state="result_available", result_run=run)
    yield 0.1
    others = [parent for parent in fleet.parents if parent != task.parent_thread]
    elsewhere = others[0] if others else fleet.quiet_parent(len(fleet.tasks))
    wake = fleet.new_wake(elsewhere)
    source = {"kind": "task", "task": task.task, "thread": child}
    fleet.queue_wake(wake, elsewhere, source, final, "completed")
    fleet.falls_due(fleet.now + fleet.settings.delivery_grace)
    woken = yield from fleet.woken_run(elsewhere, wake)
    note = f"A result of {task.title!r} arrived here; it is not for this thread."
    fleet.later(fleet.end_parent_run(elsewhere, woken, note), 0)
