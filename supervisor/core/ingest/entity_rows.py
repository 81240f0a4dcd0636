"""The entity rows a batch names, and their shape as plain values: which columns ingest
writes, and a new row's defaults."""

from __future__ import annotations

from functools import cache
from typing import Any

from supervisor.core.contract.events import Event
from supervisor.core.models import BackgroundItem, Run, Task, Thread, Wake

# What each type of event names, by kind of entity: (kind, field of its data).
NAMES: dict[str, tuple[tuple[str, str], ...]] = {
    "thread.seen": (("thread", "thread"), ("thread", "parent_thread")),
    "task.delegated": (("task", "task"), ("thread", "parent_thread"), ("thread", "child_thread")),
    "task.reported": (("task", "task"),),
    "run.requested": (("thread", "thread"), ("run", "run")),
    "run.started": (("thread", "thread"), ("run", "run")),
    "run.activity": (("thread", "thread"), ("run", "run")),
    "run.finished": (("thread", "thread"), ("run", "run")),
    "background.started": (("thread", "thread"), ("item", "item")),
    "background.finished": (("thread", "thread"), ("item", "item")),
    "wake.queued": (("wake", "wake"), ("thread", "thread")),
    "wake.delivered": (("wake", "wake"),),
    "tool.rejected": (("thread", "thread"),),
    "task.requested": (("thread", "parent_thread"),),
}


def named_entities(events: list[Event]) -> dict[str, set[str]]:
    """The entity rows the events describe or make, by kind: what a batch reads, merges
    and writes back."""
    want: dict[str, set[str]] = {k: set() for k in ("thread", "task", "run", "item", "wake")}
    for event in events:
        data = event.data
        for kind, name in NAMES[event.type]:
            value = getattr(data, name)
            if value:
                want[kind].add(value)
        if event.type == "wake.queued" and data.source.thread:
            want["thread"].add(data.source.thread)
    return want


# Written by detection alone: ingest never writes them back.
DETECTION_COLUMNS = {"evaluated_at", "next_check_at"}


def model_kind(model) -> str:
    return {Thread: "thread", Task: "task", Run: "run", BackgroundItem: "item", Wake: "wake"}[model]


@cache
def owned_columns(model) -> tuple[str, ...]:
    """The columns ingest writes (all but the row id and detection's own)."""
    return tuple(
        f.attname
        for f in model._meta.concrete_fields
        if not f.primary_key and f.attname not in DETECTION_COLUMNS and f.attname != "namespace_id"
    )


@cache
def _defaults(model) -> dict[str, Any]:
    return {
        f.attname: f.get_default()
        for f in model._meta.concrete_fields
        if f.attname in owned_columns(model)
    }


def new_row(model, namespace_id: int, entity_id: str) -> dict:
    key = {
        Thread: "thread_id",
        Task: "task_id",
        Run: "run_id",
        BackgroundItem: "item_id",
        Wake: "wake_id",
    }[model]
    return {**_defaults(model), "namespace_id": namespace_id, key: entity_id}
