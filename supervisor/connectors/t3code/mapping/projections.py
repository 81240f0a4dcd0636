"""Importing T3's projections: the entities as they stand now, told in the order that
following the log would have read them, so the facts and their ids are the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import background, delegate_calls, rows
from .fields import as_ordinal, string
from .memory import keep_only
from .messages import message
from .runs import cohort, run
from .state import MapState
from .statuses import RUN_FINISHED
from .threads import thread
from .transfers import transfer
from .turn_items import turn_item


def import_projections(
    state: MapState,
    *,
    threads: list,
    subagents: list,
    provider_threads: list,
    messages: list,
    runs: list,
    transfers: list,
    texts: dict[str, tuple[str, str]],
    turn_items: list = (),
    restart_ended: set[str] | frozenset[str] = frozenset(),
) -> None:
    """The projections' current state as if each entity had just been seen whole:
    the same ids as following would give the same facts."""
    for payload in threads:
        guard(state, thread, payload)
    for payload in runs:
        if isinstance(payload, dict) and string(payload.get("id")):
            cohort(state, payload["id"], payload)
    # The agents' delegate_task calls before the tasks they made: a task names its call.
    for payload in turn_items:
        is_call = isinstance(payload, dict) and payload.get("type") == "dynamic_tool"
        if is_call and delegate_calls.is_delegate_call(payload):
            delegate_calls.delegate_call(state, payload, None)
    # Tasks before native subagents and rosters: a roster entry may be a subagent's.
    for payload in sorted(
        (p for p in subagents if isinstance(p, dict)),
        key=lambda p: (
            p.get("origin") != "app_owned",
            string(p.get("startedAt")) or string(p.get("updatedAt")),
        ),
    ):
        if isinstance(payload, dict):
            restart = string(payload.get("id")) in restart_ended
            rows.subagent(state, payload, None, restart=restart)
        else:
            state.unknown_row("payload:projection")
    for payload in provider_threads:
        guard(state, background.roster, payload)
    state.importing = True
    # Errors and commands before the messages: a command still running (or ended
    # after) when its run had finished was background work of that run, and the
    # continuation that woke the thread for it names it only by its text.
    state.run_ends = {
        string(p.get("id")): string(p.get("completedAt"))
        for p in runs
        if isinstance(p, dict) and p.get("status") in RUN_FINISHED
    }
    for payload in sorted(
        (p for p in turn_items if isinstance(p, dict)),
        key=lambda p: string(p.get("startedAt")) or string(p.get("updatedAt")),
    ):
        guard(state, turn_item, payload)
    state.started_by = {
        p["userMessageId"] for p in runs if isinstance(p, dict) and p.get("userMessageId")
    }
    state.began_by = {
        p["userMessageId"]
        for p in runs
        if isinstance(p, dict) and p.get("userMessageId") and p.get("startedAt")
    }
    for payload in sorted(
        (p for p in messages if isinstance(p, dict)), key=lambda p: string(p.get("createdAt"))
    ):
        guard(state, message, payload)
    for run_id, (created, text) in texts.items():
        state.memory.texts[run_id] = [created, text]
    for payload in sorted(
        (p for p in runs if isinstance(p, dict)),
        key=lambda p: (string(p.get("threadId")), as_ordinal(p.get("ordinal")) or 0),
    ):
        if isinstance(payload, dict):
            run(state, payload, None, restart=string(payload.get("id")) in restart_ended)
        else:
            state.unknown_row("payload:projection")
    for payload in sorted(
        (p for p in transfers if isinstance(p, dict)), key=lambda p: string(p.get("createdAt"))
    ):
        guard(state, transfer, payload)
    state.started_by, state.began_by = set(), set()
    state.importing, state.run_ends = False, {}
    # Errors, classes and texts of runs still under way stay; the others were used.
    for section in (state.memory.errors, state.memory.classes, state.memory.texts):
        keep_only(section, state.memory.runs)


def guard(state: MapState, handler: Callable[..., None], payload: Any) -> None:
    """A projection's row to its handler; one that is no object is counted, not read."""
    if isinstance(payload, dict):
        handler(state, payload, None)
    else:
        state.unknown_row("payload:projection")
