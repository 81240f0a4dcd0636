"""On builds without a roster, a `command_execution` item still running when its run
finishes is that run's background work (`background.started` by the item's run, told
when the run finishes; `background.finished` when the item ends).
"""

from __future__ import annotations

from . import background
from .fields import first_line, string
from .ids import item_id
from .memory import KEEP_RUNS, Command, bound
from .state import MapState
from .statuses import ITEM_FINISHED


def command(state: MapState, p: dict, run: str, occurred: str | None) -> None:
    """A command item of a run is background work when it outlives the run: T3 (and
    the provider) then wake the thread when it ends, by a continuation that names no
    item, so the item is told when its run finishes and matched to that wake."""
    item_key, thread = string(p.get("id")), string(p.get("threadId"))
    if not item_key or not thread:
        return
    commands = state.memory.commands
    status = p.get("status")
    final = status in ITEM_FINISHED
    known = commands.get(item_key)
    label = first_line(p.get("input")) or string(p.get("title")) or None
    if known is None:
        outlived = False
        if state.importing and run in state.run_ends:
            outlived = not final or string(p.get("completedAt")) > state.run_ends[run]
            if not outlived:
                return
        elif final:
            return  # began and ended inside its run (or before this follower)
        else:
            outlived = run in state.memory.ended  # started once its run was over
        started = state.at(p.get("startedAt"), p.get("updatedAt"), occurred)
        if started is None:
            return
        known = commands[item_key] = [thread, run, label, started, 0]
        bound(commands, KEEP_RUNS)
        if outlived:
            promote_one(state, item_key, known)
    if final:
        del commands[item_key]
        if known[4]:
            at = state.at(p.get("completedAt"), p.get("updatedAt"), occurred)
            if at is None:
                return
            item = item_id(thread, item_key)
            state.emit(
                "background.finished",
                (item,),
                at,
                {"thread": thread, "item": item, "status": ITEM_FINISHED[status]},
            )
            background.depart(state, thread, item, "command", label, None, at)


def promote(state: MapState, run_id: str) -> None:
    """The run finished: its commands still running are its background work."""
    for item_key, known in list(state.memory.commands.items()):
        if known[1] == run_id and not known[4]:
            promote_one(state, item_key, known)


def promote_one(state: MapState, item_key: str, known: Command) -> None:
    thread, run, label, started, _ = known
    if state.memory.build.get("roster") and listed(state, thread):
        # The roster's entry stands for this work. A roster that lists nothing (an
        # import after the entry left) leaves the command item as the only trace.
        return
    known[4] = 1
    item = item_id(thread, item_key)
    state.emit(
        "background.started",
        (item,),
        started,
        {"thread": thread, "item": item, "kind": "command", "run": run, "label": label},
    )


def listed(state: MapState, thread: str) -> bool:
    """Does a roster of this thread list command work now?"""
    for roster in map(state.memory.rosters.get, state.rosters_of(thread)):
        if roster and any(entry[0] in ("command", "other") for entry in roster["tasks"].values()):
            return True
    return False
