"""stale_finalize (seed 000): the task is finalized on run 1's interim text in the gap
before the wake run 2 is requested; run 2, woken by the end of the background work run 1
started, ends with the real result, which no wake carries."""

from __future__ import annotations

from ..engine import Engine
from ..records import SOMETIMES, FleetTask, Plan, failing
from ..steps import hand_to_parent
from ..texts import Work
from .healthy.background import item_ended, item_wakes
from .healthy.reviewer import reviews

EPISODE = failing(
    "stale_finalize",
    # Reported completed with run 1's text; the owned wake run 2 (ordinal above the result
    # run) ends with another text that no wake carries: premature_completion (owed run,
    # latest result not reached), stale_result (handed text is not the latest result),
    # undelivered_result (once `delivery_grace` has passed after run 2's end).
    opens=("premature_completion", "stale_result", "undelivered_result"),
    paired=False,
    remote_only=False,
    may_be_remote=True,
    # Unscripted, half the time: a scripted one's flags must open soon.
    reviewers=SOMETIMES,
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    kind, awaited, label = "command", True, work.command
    if fleet.rng.random() < 0.3:
        kind, awaited = "subagent", None
        label = "Agent(run_in_background=true): read the transcripts"
    interim = work.interim.format(ref=ref)
    final = work.final.format(ref=ref)
    item, wake, notice = yield from item_ended(fleet, task, run, work, ref, kind, awaited, label)
    # The report lands in the tens of milliseconds before the wake run exists.
    yield 0.043
    fleet.report(task, "completed", work_state="result_available", summary=interim, result_run=run)
    yield 0.007
    yield from hand_to_parent(fleet, task, interim, "completed")
    yield 0.05
    run2 = yield from item_wakes(fleet, child, item, wake, notice)
    if plan.reviewers:
        # Seed 000's longer form: run 2 asks for reviews, whose notices wake more runs.
        yield from fleet.work(child, run2, fleet.span(20, 90))
        yield from reviews(fleet, task, run2, work, ref, plan.reviewers, closing=final)
    else:
        yield from fleet.work(child, run2, fleet.span(20, 150))
        fleet.finish_run(child, run2, "completed", final)
