"""How the simulated orchestrator answers an action: the contract events it emits.

- deliver: a `manual` wake to the parent thread carrying the text, delivered into a new
  parent run that it starts (and that soon ends); the wake is the one Supervisor records
  the delivery as (`Outgoing.delivery_wake`), so one delivery is one wake;
- continue: a `manual` wake of the task to the child thread (the one Supervisor records
  the continue as, `Outgoing.wake`) and a new run it starts, which ends completed;
- cancel: the child's active run ends `cancelled`, and the task is reported cancelled.

Event, run and wake ids derive from the action's idempotency key: answering the same
action twice emits the same ids, which ingest takes once per (source, id), so a retry
makes duplicates, never a second run or wake. What an answer needs to know of a thread
(its runs' ordinals, its active run) comes from a `ThreadView`, read from the mirror
in-process or from the fleet's state out of process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from supervisor.core.contract.connectors import Outgoing

from .fleet import stamp

# How long after the answer its runs end: they are short, and end "later" than they start.
DELIVERED_RUN_SECONDS = 2.0
CONTINUED_RUN_SECONDS = 3.0


@dataclass(frozen=True)
class ThreadView:
    """A thread as an answer needs it: its known runs, its active run, its environment."""

    thread: str
    runs: Mapping[str, int] = field(default_factory=dict)  # run id -> ordinal
    active_run: str | None = None  # the latest run not finished, if any
    env: str = "default"

    def ordinal_for(self, run: str) -> int:
        """The ordinal `run` has, or the next one of the thread when it is new: an answer
        repeated after its run was taken in keeps that run's ordinal."""
        if run in self.runs:
            return self.runs[run]
        return max(self.runs.values(), default=0) + 1


class UnknownKind(ValueError):
    pass


def answer_events(outgoing: Outgoing, view: ThreadView, at: datetime) -> list[dict[str, Any]]:
    """The events answering `outgoing`, whose target thread `view` describes, at `at`."""
    answer = _Answer(outgoing, view, at)
    if outgoing.kind == "deliver":
        return answer.deliver()
    if outgoing.kind == "continue":
        return answer.continue_()
    if outgoing.kind == "cancel":
        return answer.cancel()
    raise UnknownKind(f"unknown action kind {outgoing.kind!r}; expected cancel, continue, deliver")


def key_digest(idempotency_key: str) -> str:
    """A short, stable stand-in for the key in ids (keys may be up to 200 characters)."""
    return hashlib.sha256(idempotency_key.encode()).hexdigest()[:16]


class _Answer:
    def __init__(self, outgoing: Outgoing, view: ThreadView, at: datetime):
        self.outgoing = outgoing
        self.view = view
        self.at = at.astimezone(UTC)
        self.digest = key_digest(outgoing.idempotency_key)
        self.events: list[dict[str, Any]] = []

    def emit(self, part: str, type_: str, after: float = 0.0, **data: Any) -> None:
        self.events.append(
            {
                "id": f"answer-{self.digest}-{part}",
                "type": type_,
                "at": stamp(self.at + timedelta(seconds=after)),
                "env": self.view.env,
                "data": {k: v for k, v in data.items() if v is not None},
            }
        )

    def new_run(self) -> tuple[str, int]:
        run = f"{self.view.thread}:run:answer-{self.digest}"
        return run, self.view.ordinal_for(run)

    def deliver(self) -> list[dict[str, Any]]:
        out, thread = self.outgoing, self.view.thread
        # The wake Supervisor records the delivery as: one delivery is one wake.
        wake = out.delivery_wake
        run, ordinal = self.new_run()
        self.emit(
            "wake",
            "wake.queued",
            wake=wake,
            thread=thread,
            source={"kind": "manual", "task": out.task_id},
            summary=out.text,
        )
        self.emit(
            "run",
            "run.requested",
            0.02,
            thread=thread,
            run=run,
            ordinal=ordinal,
            trigger={"kind": "wake", "wake": wake},
        )
        self.emit("delivered", "wake.delivered", 0.03, wake=wake, run=run)
        self.emit("started", "run.started", 0.05, thread=thread, run=run)
        title = out.task_title or out.task_id
        self.emit(
            "finished",
            "run.finished",
            DELIVERED_RUN_SECONDS,
            thread=thread,
            run=run,
            status="completed",
            summary=f"Read the result of {title!r} delivered by hand; carrying on with it.",
        )
        return self.events

    def continue_(self) -> list[dict[str, Any]]:
        out, thread = self.outgoing, self.view.thread
        # The wake Supervisor records the continue as (`Outgoing.wake`): the run it starts
        # names it, so the task owns that run (contract §4, rule 5).
        wake = out.wake
        run, ordinal = self.new_run()
        self.emit(
            "wake",
            "wake.queued",
            wake=wake,
            thread=thread,
            source={"kind": "manual", "task": out.task_id},
            summary=out.text,
        )
        self.emit(
            "run",
            "run.requested",
            0.02,
            thread=thread,
            run=run,
            ordinal=ordinal,
            trigger={"kind": "wake", "wake": wake},
        )
        self.emit("started", "run.started", 0.05, thread=thread, run=run)
        asked = " ".join((out.text or "").split())
        if len(asked) > 120:
            asked = asked[:117] + "..."
        title = out.task_title or out.task_id
        self.emit(
            "finished",
            "run.finished",
            CONTINUED_RUN_SECONDS,
            thread=thread,
            run=run,
            status="completed",
            summary=f"Continued {title!r} as asked ({asked}); the remaining work is done.",
        )
        return self.events

    def cancel(self) -> list[dict[str, Any]]:
        out, thread = self.outgoing, self.view.thread
        run = out.run_id or self.view.active_run
        fields: dict[str, Any] = {}
        if run is not None:
            why = f" ({out.reason})" if out.reason else ""
            summary = (
                f"Stopped at the operator's request via Supervisor{why}; work left unfinished."
            )
            self.emit(
                "stopped",
                "run.finished",
                thread=thread,
                run=run,
                status="cancelled",
                summary=summary,
            )
            # The stopped run's text is what the orchestrator hands on with the report.
            fields = {"summary": summary, "result_run": run}
        self.emit(
            "report",
            "task.reported",
            0.05,
            task=out.task_id,
            status="cancelled",
            **fields,
        )
        return self.events


def view_from_fleet(fleet, thread: str) -> ThreadView | None:
    """The thread as an out-of-process simulator knows it; None if its fleet never saw it."""
    with fleet.lock:
        state = fleet.threads.get(thread)
        if state is None:
            return None
        return ThreadView(
            thread=thread,
            runs=dict(state.runs),
            active_run=state.active[-1] if state.active else None,
            env=state.env,
        )
