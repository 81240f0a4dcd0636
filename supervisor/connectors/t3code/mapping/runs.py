"""A run is `run.requested` with the trigger of the message that started it (a notice:
`wake`; the child's first run: `delegation`), `run.started`, `run.finished` with T3's own
choice of its text (the latest non-empty assistant message) and, when it failed, the
error T3 wrote as an `error` turn item. A wake is delivered when the run it started
starts (a queued run may never start), or when it is steered into a run (messages.py).
"""

from __future__ import annotations

from . import commands, wakes
from .fields import as_ordinal, parse_time, string
from .memory import KEEP_ENDED, KEEP_RUNS, Run, bound
from .state import MapState
from .statuses import RUN_FINISHED, RUN_UNDER_WAY

ACTIVITY_EVERY = 30  # seconds: the contract's throttle for run.activity
# T3's result for a child run that wrote no assistant text (J SubagentProjection.ts).
NO_TEXT_RESULT = {"completed": "Child task completed without an assistant result."}


def run(state: MapState, p: dict, occurred: str | None, *, restart: bool = False) -> None:
    """A run's row: requested (once its trigger is known), started, finished; told once
    each, whatever T3 rewrites on it later."""
    run_id, thread = string(p.get("id")), string(p.get("threadId"))
    ordinal = as_ordinal(p.get("ordinal"))
    if not run_id or not thread or ordinal is None:
        state.unknown_value("run.id")
        return
    cohort(state, run_id, p)
    if run_id in state.memory.ended:
        return  # told once: a later rewrite (a rollback, say) changes nothing here
    runs = state.memory.runs
    known = runs.get(run_id)
    if known is None:
        known = runs[run_id] = {"requested": False, "started": False, "activity": None}
        bound(runs, KEEP_RUNS)
    if not known["requested"]:
        request(state, run_id, thread, ordinal, p, occurred, known)
    status = p.get("status")
    started = p.get("startedAt")
    if not known["started"] and started and status != "rolled_back":
        at = state.at(started)
        if at is not None:
            known["started"], known["started_at"] = True, at
            state.emit("run.started", (run_id,), at, {"thread": thread, "run": run_id})
            deliver(state, run_id, known, at)
    if status in RUN_FINISHED or status == "rolled_back":
        at = state.at(p.get("completedAt"), p.get("updatedAt"), occurred)
        if at is None:
            return
        text = final_text(state, run_id)
        # T3 writes a failed run's error as an error turn item, not as its text.
        error = state.memory.errors.pop(run_id, None)
        failure_class = state.memory.classes.pop(run_id, None)
        if status != "failed":
            failure_class = None
        if status == "failed" and error is None and text:
            error = text
        if status == "failed" and error:
            # Kept for the task's report: T3 writes the failure only on the run.
            state.memory.failures[run_id] = [thread, error, failure_class]
            bound(state.memory.failures, KEEP_ENDED)
        if not text.strip() and error is None and thread in state.memory.children:
            # A task's run with no text: the result T3 hands for it (facts §4).
            text = NO_TEXT_RESULT.get(status) or f"Child task ended with status {status}."
        state.emit(
            "run.finished",
            (run_id,),
            at,
            {
                "thread": thread,
                "run": run_id,
                # Rolled back before it ended: undone, as a cancel is.
                "status": RUN_FINISHED.get(status, "cancelled"),
                "summary": text or (error if status == "failed" else None) or "",
                "error": error if status == "failed" else None,
                "failure_class": failure_class,
                # Cut by a restart's recovery, not stopped by anyone (facts §7).
                "cause": "restart" if restart and status == "cancelled" else None,
            },
        )
        known.pop("wakes", None)  # ended without starting: its wakes never arrived
        commands.promote(state, run_id)
        state.memory.ended[run_id] = at
        bound(state.memory.ended, KEEP_ENDED)
        if known["requested"]:
            del runs[run_id]
        else:
            known["finished"] = True  # forgotten once its start message is read
    elif status not in RUN_UNDER_WAY:
        state.unknown_value(f"run.status:{status}")


def cohort(state: MapState, run_id: str, p: dict) -> None:
    """A delegating run's completion cohort (P006, K33): how many deliveries of its
    tasks' results T3 has settled. T3 rewrites it on the run long after it ended."""
    completion = p.get("delegatedCompletion")
    settled = completion.get("settledDeliveryCount") if isinstance(completion, dict) else None
    if isinstance(settled, int) and not isinstance(settled, bool) and settled >= 0:
        state.memory.cohorts[run_id] = settled
        bound(state.memory.cohorts, KEEP_RUNS)


def request(
    state: MapState,
    run_id: str,
    thread: str,
    ordinal: int,
    p: dict,
    occurred: str | None,
    known: Run,
) -> None:
    """`run.requested`, with its trigger; held while its start message is not read."""
    at = state.at(p.get("requestedAt"), p.get("createdAt"), occurred)
    if at is None:
        return
    start = string(p.get("userMessageId")) or None
    trigger, delivering = trigger_of(state, thread, ordinal, start)
    if trigger is None:
        # Its start message is not read yet: ask again when it is.
        known["held"] = {
            k: p.get(k) for k in ("id", "threadId", "ordinal", "requestedAt", "userMessageId")
        }
        waiting = state.memory.pending.setdefault(start, [])
        if run_id not in waiting:
            waiting.append(run_id)
        return
    known["requested"] = True
    known.pop("held", None)
    state.emit(
        "run.requested",
        (run_id,),
        at,
        {"thread": thread, "run": run_id, "ordinal": ordinal, "trigger": trigger},
    )
    if delivering:
        known["wakes"] = delivering
        if known.get("started"):
            deliver(state, run_id, known, known.get("started_at") or at)


def deliver(state: MapState, run_id: str, known: Run, at: str) -> None:
    """A wake reaches the run it queued when that run starts, not when it is queued
    (a queued run can be cancelled, held, or never start)."""
    for wake in known.pop("wakes", None) or ():
        state.emit("wake.delivered", (wake,), at, {"wake": wake, "run": run_id})


def trigger_of(
    state: MapState, thread: str, ordinal: int, start: str | None
) -> tuple[dict | None, list[str]]:
    """The run's trigger and the wakes it delivers; (None, []) to wait for the
    message that started it."""
    task = state.memory.children.get(thread)
    if start is None:
        if ordinal == 1 and task:
            return {"kind": "delegation", "task": task}, []
        return {"kind": "other"}, []
    messages = state.memory.messages
    entry = messages.get(start)
    if entry is None and state.lookup is not None:
        payload = state.lookup.message(start)
        if isinstance(payload, dict) and string(payload.get("id")) == start:
            its_thread = string(payload.get("threadId"))
            entry = wakes.remember(
                state, payload, start, its_thread, payload.get("role"), None, None
            )
    if entry is None:
        return None, []
    if isinstance(entry, list):
        queued, delivered = entry
        entry[1] = 1
        if not queued:
            return {"kind": "other"}, []  # a notice not understood
        return {"kind": "wake", "wake": queued[0]}, [] if delivered else queued
    messages.pop(start, None)
    if entry == "s":
        return {"kind": "scheduled"}, []
    if ordinal == 1 and task:
        return {"kind": "delegation", "task": task}, []  # the prompt started it
    return {"kind": "message"}, []


def reply(state: MapState, run: str, when: str, text: str) -> None:
    """An assistant's text in a run. T3's choice of a run's result: its latest non-empty
    assistant text."""
    last = state.memory.texts.get(run)
    if last is None or (text.strip() and (not last[1].strip() or when >= last[0])):
        state.memory.texts[run] = [when, text]


def final_text(state: MapState, run_id: str) -> str:
    """The run's result as T3 chose it, now that it finished (the projections' when
    memory has none)."""
    last = state.memory.texts.pop(run_id, None)
    if last is not None:
        return last[1]
    text = state.lookup.last_assistant_text(run_id) if state.lookup else None
    return text or ""


def activity(state: MapState, p: dict, occurred: str | None) -> None:
    """Output of a run under way (a message, a tool call): at most one per 30 s."""
    run, thread = string(p.get("runId")), string(p.get("threadId"))
    known = state.memory.runs.get(run) if run else None
    if known is None or not thread:
        return
    at = state.at(p.get("updatedAt"), occurred)
    if at is None:
        return
    bucket = int(parse_time(at).timestamp()) // ACTIVITY_EVERY
    if known.get("activity") == bucket:
        return
    known["activity"] = bucket
    state.emit("run.activity", (run, bucket), at, {"thread": thread, "run": run})
