"""What a continue sent by Supervisor led to (issue 30): the run of the child it started
(the run whose trigger names the continue's manual wake, or the run the wake was
delivered into when it joined a run under way), what that run did, and what is left
to do: wait, deliver its result, or nothing. Pure over a Snapshot; the caller gives
the continue's wake id (`connectors.continue_wake`). Whether its result reached the
parent is read as the operator sees it (the panel beside it), and which is the latest
result by the contract's words (§4), both from `core.facts.reading`."""

from __future__ import annotations

from dataclasses import dataclass

from supervisor.core.facts import ownership, reading
from supervisor.core.facts.ownership import run_name
from supervisor.core.facts.snapshot import RunView, Snapshot, TaskView

__all__ = ["Continued", "continued_run", "run_name", "what_continued"]

WAIT = "wait"
DELIVER = "deliver"
ACT = "act"  # the run ended without a result: continue again, or cancel
NOTHING = "nothing"


@dataclass(frozen=True)
class Continued:
    """A continue's run and what is left, in an operator's words."""

    run: RunView | None  # None: the child has not started a run for it yet
    did: str  # "run 2 finished completed: …"
    left: str  # WAIT | DELIVER | ACT | NOTHING
    left_words: str

    @property
    def deliver_run(self) -> str | None:
        return self.run.id if self.left == DELIVER and self.run is not None else None


def continued_run(snap: Snapshot, view: TaskView, wake_id: str) -> RunView | None:
    """The run the continue's wake started, or the run it was delivered into."""
    child = ownership.child_thread(snap, view) or ""
    for run in snap.runs_by_thread.get(child, []):
        if run.trigger_kind == "wake" and run.trigger_ref == wake_id:
            return run
    wake = snap.wakes.get(wake_id)
    joined = wake.delivered_run if wake is not None else None
    return snap.runs.get(joined) if joined else None


def what_continued(snap: Snapshot, view: TaskView, wake_id: str) -> Continued:
    run = continued_run(snap, view, wake_id)
    if run is None:
        return Continued(
            None,
            "the child has not started a run for the continue yet",
            WAIT,
            "wait for the child to start its run",
        )
    name = run_name(run)
    owned = ownership.owning(snap, view, run).owned
    whose = "the task’s own" if owned else "not the task’s own"
    if not run.finished:
        return Continued(run, f"{name} ({whose}) is under way", WAIT, f"wait for {name} to finish")
    if run.status != "completed" or not ownership.has_result(run):
        why = f": {run.error}" if run.error else ""
        return Continued(
            run,
            f"{name} ({whose}) finished {run.status or 'without a status'} with no result{why}",
            ACT,
            "continue the child again, or cancel the task",
        )
    did = f"{name} ({whose}) finished completed: “{_excerpt(run.summary)}”"
    # Reached as the operator sees it, as the panel beside this one shows it.
    if reading.reached_as_operator_sees_it(snap, view, run):
        return Continued(run, did, NOTHING, "nothing: its result has reached the parent")
    if (queued := reading.queued_not_taken(snap, view, run)) is not None:
        return Continued(
            run,
            did,
            WAIT,
            f"wait: its result is queued for the parent (wake {queued.id}), which has not "
            "taken it yet",
        )
    latest = reading.latest_result_by_contract(snap, view)
    if latest is not None and latest.id != run.id and (latest.ordinal or 0) > (run.ordinal or 0):
        return Continued(
            run,
            did,
            NOTHING,
            f"nothing for {name}: the child’s later {run_name(latest)} has the latest result",
        )
    return Continued(run, did, DELIVER, "deliver its result to the parent, which does not have it")


def _excerpt(text: str | None, limit: int = 160) -> str:
    words = " ".join((text or "").split())
    return words if len(words) <= limit else words[: limit - 1] + "…"
