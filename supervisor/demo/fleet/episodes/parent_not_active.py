"""parent_not_active (seed 004): the child's background subagent calls delegate_task
after the child's run ended and is refused; the subagent's end starts run 2, which
completes."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..steps import complete, started_report
from ..texts import Work

EPISODE = failing(
    "parent_not_active",
    # The task itself is healthy; the refusal flags its child thread.
    opens=(),
    child_thread_opens=("delegation_rejected",),
    paired=False,
    remote_only=False,
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    env = fleet.threads[child].env
    final = work.final.format(ref=ref)
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(20, 90))
    item = fleet.background(
        child, run, "subagent", "Agent(run_in_background=true): get a Codex review", None
    )
    yield fleet.span(2, 20)
    fleet.finish_run(child, run, "completed", f"Started a background agent for {ref}.")
    yield 0.2
    fleet.report(task, "waiting", work_state="waiting_for_children")
    for _ in range(fleet.rng.choice((1, 2))):
        yield fleet.span(20, 120)
        fleet.emit(
            "tool.rejected",
            env,
            thread=child,
            tool="delegate_task",
            code="parent_not_active",
            message="Delegated tasks require an active run owned by this MCP provider session.",
            caller="native_subagent",
        )
    yield fleet.span(20, 120)
    fleet.item_finished(child, item, "completed")
    yield 1.25
    run2 = fleet.request_run(child, {"kind": "background", "item": item})
    yield 0.05
    fleet.start_run(child, run2)
    yield from fleet.work(child, run2, fleet.span(10, 60))
    text = f"{final} (The background agent could not delegate: parent_not_active.)"
    fleet.finish_run(child, run2, "completed", text)
    yield from complete(fleet, task, run2, text)
