"""The row dispatcher: each row of T3's event log to the handler of what it carries.

T3 stores whole entities (a subagent, a run, a provider thread's roster, a message, a
context transfer) and rewrites them in place; each event row carries the entity after
the change, and the handler diffs it against memory.
"""

from __future__ import annotations

from ..schema import RESTART_COMMAND, Row, decoded
from . import background, messages, runs, tasks, threads, transfers, turn_items
from .fields import string
from .state import MapState

# Event types this follower maps; the others T3 writes are known and carry nothing here.
THREAD_TYPES = frozenset(
    {
        "thread.created",
        "thread.archived",
        "thread.unarchived",
        "thread.deleted",
        "thread.metadata-updated",
        "thread.runtime-mode-updated",
        "thread.interaction-mode-updated",
        "thread.model-selection-updated",
        "thread.provider-switched",
    }
)
# Known to carry nothing a supervisor needs (facts §3): skipped quietly, never "unknown".
IGNORED_TYPES = frozenset(
    {
        "thread.settled",
        "thread.unsettled",
        "thread.snoozed",
        "thread.unsnoozed",
        "thread.pinned",
        "thread.unpinned",
        "thread.auto-settle-set",
        "thread.pin-reordered",
        "thread.active-reordered",
        "thread.visited",
        "thread.marked-unread",
        "thread.pull-request-synced",
        "run-attempt.created",
        "run-attempt.updated",
        "node.updated",
        "provider-session.attached",
        "provider-session.updated",
        "provider-session.detached",
        "provider-turn.updated",
        "runtime-request.updated",
        "plan.updated",
        "checkpoint-scope.created",
        "checkpoint.captured",
        "checkpoint.rollback-requested",
        "context-handoff.updated",
    }
)
# Families T3 grows (attempts, sessions, checkpoints): any member is known and skipped.
IGNORED_PREFIXES = ("run-attempt.", "provider-session.", "checkpoint")


def map_row(state: MapState, row: Row) -> None:
    """One row of T3's event log, to the handler of the entity it carries."""
    if row.aggregate_kind not in (None, "thread") or row.version not in (None, 2):
        state.skipped += 1  # an older version's row, or another aggregate
        return
    kind = row.event_type
    if not isinstance(row.payload, dict):
        state.unknown_row(f"payload:{kind}")
        return
    if kind in THREAD_TYPES:
        threads.thread(state, row.payload, row.occurred_at, created=kind == "thread.created")
    elif kind in ("run.created", "run.updated"):
        restart = (row.command_id or "").startswith(RESTART_COMMAND)
        runs.run(state, row.payload, row.occurred_at, restart=restart)
    elif kind == "subagent.updated":
        restart = (row.command_id or "").startswith(RESTART_COMMAND)
        subagent(state, row.payload, row.occurred_at, restart=restart)
    elif kind == "provider-thread.updated":
        # Only this type reads the metadata: decoded here, not for every row.
        metadata = decoded(row.metadata)
        run = metadata.get("runId") if isinstance(metadata, dict) else None
        background.roster(state, row.payload, row.occurred_at, run=run)
    elif kind == "message.updated":
        messages.message(state, row.payload, row.occurred_at)
    elif kind in ("context-transfer.created", "context-transfer.updated"):
        transfers.transfer(state, row.payload, row.occurred_at)
    elif kind == "turn-item.updated":
        turn_items.turn_item(state, row.payload, row.occurred_at)
    elif kind == "run.background-work-cancelled":
        background.work_cancelled(state, row.payload, row.occurred_at, row.stream_id)
    elif kind in IGNORED_TYPES or (kind or "").startswith(IGNORED_PREFIXES):
        state.skipped += 1
    else:
        state.unknown_row(f"event_type:{kind}")


def subagent(state: MapState, p: dict, occurred: str | None, *, restart: bool = False) -> None:
    """A subagent by its origin: an `app_owned` one is a task, a `provider_native` one
    background work of its thread."""
    origin = p.get("origin")
    if not string(p.get("id")) or not string(p.get("threadId")):
        state.unknown_value("subagent.id")
    elif origin == "app_owned":
        tasks.task(state, p, occurred, restart=restart)
    elif origin == "provider_native":
        background.native(state, p, occurred)
    else:
        state.unknown_value(f"subagent.origin:{origin}")
