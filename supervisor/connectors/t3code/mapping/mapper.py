"""The public entry: `Mapper`, one mapping of T3's rows with its own state, as the
follower and the tests call it; and `coalesced`, a batch's events less the activity its
runs' ends make moot.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from ..schema import Row
from .memory import Memory, Task
from .projections import import_projections
from .rows import map_row
from .state import Lookup, MapState
from .tasks import failure_of


class Mapper:
    """Translates rows one at a time into contract events, updating `memory` as it goes.

    `memory` is the follower's to keep: after the events of a batch are stored, the
    memory must be stored with them (same transaction), else a replay would differ.
    """

    def __init__(
        self, memory: dict | None = None, *, env: str | None = None, lookup: Lookup | None = None
    ):
        stored = memory if memory is not None else {}
        self.state = MapState(Memory.from_dict(stored), env=env, lookup=lookup)

    @property
    def memory(self) -> dict:
        """The memory as the follower stores it (its sections change in place)."""
        return self.state.memory.to_dict()

    @property
    def skipped(self) -> int:
        """Rows with nothing for Supervisor."""
        return self.state.skipped

    @property
    def unknown_rows(self) -> int:
        """Rows not understood."""
        return self.state.unknown_rows

    @property
    def unknown_values(self) -> int:
        """Values outside T3's known enumerations."""
        return self.state.unknown_values

    @property
    def unknown(self) -> Counter[str]:
        """What was not understood, by name."""
        return self.state.unknown

    def map_rows(self, rows: Iterable[Row]) -> list[dict]:
        for row in rows:
            map_row(self.state, row)
        return self.take()

    def take(self) -> list[dict]:
        """The events told since the last take."""
        out, self.state.out = self.state.out, []
        return out

    def map_row(self, row: Row) -> None:
        map_row(self.state, row)

    def import_state(self, **projections: Any) -> list[dict]:
        """The projections as they stand (`projections.import_projections`'s arguments),
        told as events."""
        import_projections(self.state, **projections)
        return self.take()

    def _failure_of(self, known: Task) -> tuple[str | None, str | None]:
        # A test reads a task's failure through the mapper (memory kept before classes).
        return failure_of(self.state, known)


def coalesced(events: list[dict]) -> list[dict]:
    """The events of a batch less the activity of runs that end in the same batch: a
    run's end says all its activity did (catching up, that is one event in eight)."""
    ended = {e["data"]["run"] for e in events if e["type"] == "run.finished"}
    if not ended:
        return events
    return [e for e in events if e["type"] != "run.activity" or e["data"]["run"] not in ended]
