"""A message is told by the run it starts (its trigger: a notice's wake, a message, a
scheduled task), by the run it was steered into (a notice's wakes are delivered), or as
the run's text (an assistant's). A run whose start message was not read yet is held
until it is.
"""

from __future__ import annotations

from . import runs, wakes
from .fields import string
from .state import MapState


def message(state: MapState, p: dict, occurred: str | None) -> None:
    """A message's row: an assistant's is its run's text; another is remembered for the
    run it starts (wakes.remember), and may be a notice steered into a run under way."""
    message_id, thread = string(p.get("id")), string(p.get("threadId"))
    if not message_id or not thread:
        state.unknown_value("message.id")
        return
    role = p.get("role")
    run = string(p.get("runId")) or None
    if role == "assistant":
        if run and run in state.memory.runs:
            text = p.get("text") if isinstance(p.get("text"), str) else ""
            runs.reply(state, run, string(p.get("updatedAt")) or string(p.get("createdAt")), text)
            runs.activity(state, p, occurred)
        return
    entry = wakes.remember(state, p, message_id, thread, role, run, occurred)
    if entry is None:
        return
    # A notice given a run that another message started was steered into that run
    # (a run not seen yet may be the notice's own, queued: its row tells).
    known_run = state.memory.runs.get(run) if run else None
    steered = (
        isinstance(entry, list)
        and entry[0]
        and not entry[1]
        and (state.importing or (known_run is not None and known_run.get("requested")))
    )
    if steered and message_id not in state.started_by:
        at = state.at(p.get("updatedAt"), occurred)
        if at is not None:
            entry[1] = 1
            for wake in entry[0]:
                state.emit("wake.delivered", (wake,), at, {"wake": wake, "run": run})
    for run_id in state.memory.pending.pop(message_id, []):
        known = state.memory.runs.get(run_id)
        held = known.pop("held", None) if known else None
        if held:
            runs.request(state, run_id, held["threadId"], held["ordinal"], held, None, known)
            if known.get("finished"):
                del state.memory.runs[run_id]
