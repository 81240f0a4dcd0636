"""A thread is told as it is described (`thread.seen`): its title, its parent thread,
its provider and model; told again when any of these changes.
"""

from __future__ import annotations

from .fields import first_string, string
from .state import MapState


def thread(state: MapState, p: dict, occurred: str | None, *, created: bool = False) -> None:
    """`thread.seen`: the thread as described now (its title, parent, provider, model)."""
    thread = string(p.get("id")) or None
    if thread is None:
        state.unknown_value("thread.id")
        return
    # Described when made, and again (later) when its title or parent changes.
    first, then = ("createdAt", "updatedAt") if created else ("updatedAt", "createdAt")
    at = state.at(p.get(first), p.get(then), occurred)
    if at is None:
        return
    title = p.get("title") if isinstance(p.get("title"), str) else None
    # The parent link is nested: no build writes a top-level `parentThreadId`.
    lineage = p.get("lineage") if isinstance(p.get("lineage"), dict) else {}
    parent = first_string(lineage.get("parentThreadId"))
    provider = first_string(p.get("providerInstanceId"), p.get("defaultProvider"))
    selection = p.get("modelSelection")
    model = string(selection.get("model")) or None if isinstance(selection, dict) else None
    data = {
        "thread": thread,
        "title": title,
        "parent_thread": parent,
        "provider": provider,
        "model": model,
    }
    # The content is the fact: telling the same thread again is a duplicate.
    state.emit("thread.seen", (thread, title, parent, provider, model), at, data)
