"""Reading T3's values: its JSON is loosely typed (a field may be missing, null, or of
another type on another build), so each reader says what it takes and what it gives
for anything else.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from supervisor.core import clock
from supervisor.core.contract.events import parse_timestamp
from supervisor.core.contract.times import outside_window

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def first_string(*values: Any) -> str | None:
    return next((v for v in values if isinstance(v, str) and v), None)


def first_line(value: Any) -> str:
    return string(value).strip().split("\n", 1)[0][:200]


def as_ordinal(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def time_problem(value: str) -> str | None:
    """Why T3's `value` is no time to tell (None when it is one): the contract would
    refuse it, and its event would be a dead letter instead of a fact."""
    try:
        when = parse_timestamp(value)
    except ValueError:
        return "not a real time"
    return "outside the window" if outside_window(when, clock.now()) else None


def parse_time(at: str) -> datetime:
    """A time the mapping chose (`time_problem` found none in it), so this cannot raise."""
    return parse_timestamp(at)
