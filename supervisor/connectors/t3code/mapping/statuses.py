"""T3's statuses in the contract's words (docs/event-contract.md §3; t3code-facts.md)."""

from __future__ import annotations

RUN_FINISHED = {
    "completed": "completed",
    "failed": "failed",
    "interrupted": "interrupted",
    "cancelled": "cancelled",
}
RUN_UNDER_WAY = frozenset({"preparing", "queued", "starting", "running", "waiting"})
# T3's subagent statuses in the contract's: `pending` is accepted work about to run,
# `idle` is settled but resumable (not terminal).
TASK_STATUS = {
    "pending": "running",
    "running": "running",
    "idle": "waiting",
    "waiting": "waiting",
    "completed": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
    "interrupted": "interrupted",
}
TERMINAL = frozenset({"completed", "failed", "cancelled", "interrupted"})
ITEM_FINISHED = {"completed": "completed", "failed": "failed", "cancelled": "cancelled"}
WAKE_OUTCOMES = frozenset({"completed", "failed", "cancelled", "updated"})
