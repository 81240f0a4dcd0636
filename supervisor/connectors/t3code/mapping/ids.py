"""The ids the mapping gives facts, and the ids T3's own ids carry.

Event ids are derived from the facts (an entity id, a status and its time), never from
the row that told them, so importing the projections and following the log say the same
fact with the same id: a second telling is a duplicate, not a double.
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import unquote


def event_id(event_type: str, *key: Any) -> str:
    """A stable id for a fact: the contract type and a digest of what identifies it."""
    text = "\x1f".join("" if part is None else str(part) for part in key)
    return f"t3:{event_type}:{hashlib.blake2b(text.encode(), digest_size=12).hexdigest()}"


def digest(*key: Any) -> str:
    """The digest part of `event_id`: what a retelling appends to the first telling's id
    (an id that extends another sorts after it, and wins the tie: contract §4)."""
    return event_id("", *key).rsplit(":", 1)[1]


def item_id(thread: str, task_id: str) -> str:
    """A roster entry's item: its task id is the provider's, unique within the thread."""
    return f"{thread}:bg:{task_id}"


def request_key(task_id: str) -> str | None:
    """The agent's `clientRequestId` an MCP-made task's id carries: T3 names the task
    `node:delegated-task:<command>` (each part encoded, facts §8), the command
    `command:mcp:<session>:delegate-task:<key>`; without one from the agent the key is
    T3's own UUID. None for a task a client's command made."""
    prefix = "node:delegated-task:"
    if not task_id.startswith(prefix):
        return None
    parts = unquote(task_id[len(prefix) :]).split(":")
    if len(parts) < 5 or parts[:2] != ["command", "mcp"] or parts[3] != "delegate-task":
        return None
    return unquote(parts[4])[:500] or None
