"""What every handler works over: the memory, and what one pass through rows gathers
(the events told, the counts of what was not understood, indexes over memory)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from .fields import ISO, time_problem
from .ids import event_id
from .memory import Memory


class Lookup(Protocol):
    """What the mapper may read from the projections when its memory has nothing."""

    def message(self, message_id: str) -> Any: ...

    def last_assistant_text(self, run_id: str) -> str | None: ...


@dataclass(slots=True)
class MapState:
    memory: Memory
    env: str | None = None
    lookup: Lookup | None = None
    out: list[dict] = field(default_factory=list)  # events told, until taken
    skipped: int = 0  # rows with nothing for Supervisor
    unknown_rows: int = 0  # rows not understood
    unknown_values: int = 0  # values outside T3's known enumerations
    unknown: Counter[str] = field(default_factory=Counter)
    # While importing the projections (projections.py): what the runs say of messages
    # and of their own ends, which following would have read before.
    importing: bool = False
    started_by: set[str] = field(default_factory=set)  # messages that started a run
    began_by: set[str] = field(default_factory=set)  # messages whose run began
    run_ends: dict[str, str] = field(default_factory=dict)  # finished runs' completedAt
    # Indexes over memory, built when first needed and kept up as it changes.
    _rosters_by_thread: dict[str, set[str]] | None = None
    _natives_by_thread: dict[str, set[str]] | None = None
    _tasks_by_child: dict[str, set[str]] | None = None

    def emit(
        self, event_type: str, key, at: str, data: dict, *, suffix: str = "", told_as=None
    ) -> None:
        """Tell one fact; its id from `key` (or `told_as`, an id made by the caller)."""
        event = {
            "id": told_as or event_id(event_type, *key) + suffix,
            "type": event_type,
            "at": at,
            "data": {k: v for k, v in data.items() if v is not None},
        }
        if self.env:
            event["env"] = self.env
        self.out.append(event)

    def at(self, *candidates: Any) -> str | None:
        """The first well-formed timestamp of the candidates (T3's own fields before the
        row's `occurred_at`) that is a real time inside the window the supervisor accepts
        (core/contract/times.py): one T3 got wrong (9999, 2026-02-30) is counted and passed over
        for the next. None, counted, when there is none."""
        for value in candidates:
            if not (isinstance(value, str) and ISO.match(value)):
                continue
            problem = time_problem(value)
            if problem is None:
                return value
            self.unknown_value(f"timestamp:{problem}")
        self.unknown_value("timestamp")
        return None

    def unknown_value(self, name: str) -> None:
        self.unknown_values += 1
        self.unknown[name] += 1

    def unknown_row(self, name: str) -> None:
        self.unknown_rows += 1
        self.unknown[name] += 1

    def tasks_of(self, child: str) -> list[str]:
        """The tasks whose child thread this is (a task and its follow-ups), sorted."""
        if self._tasks_by_child is None:
            self._tasks_by_child = {}
            for task_id, known in self.memory.tasks.items():
                if known["child"]:
                    self._tasks_by_child.setdefault(known["child"], set()).add(task_id)
        return sorted(self._tasks_by_child.get(child, ()))

    def task_moved(self, task_id: str, before: str | None, child: str) -> None:
        """A task's child thread is now `child`: the index follows, once it is built."""
        if self._tasks_by_child is None:
            return
        if before:
            self._tasks_by_child.get(before, set()).discard(task_id)
        self._tasks_by_child.setdefault(child, set()).add(task_id)

    def rosters_of(self, thread: str) -> set[str]:
        """The provider threads whose roster is this app thread's."""
        if self._rosters_by_thread is None:
            self._rosters_by_thread = {}
            for provider_thread, roster in self.memory.rosters.items():
                self._rosters_by_thread.setdefault(roster["thread"], set()).add(provider_thread)
        return self._rosters_by_thread.setdefault(thread, set())

    def natives_of(self, thread: str) -> set[str]:
        """The native subagents started in this thread."""
        if self._natives_by_thread is None:
            self._natives_by_thread = {}
            for sub_id, native in self.memory.natives.items():
                self._natives_by_thread.setdefault(native["thread"], set()).add(sub_id)
        return self._natives_by_thread.setdefault(thread, set())
