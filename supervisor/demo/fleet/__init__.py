"""The demo fleet: a deterministic stream of an orchestrator fleet's events, healthy
work mixed with the field reports' failures (`engine.Fleet`, whose docstring says more);
`records`, `texts` and `demo` hold its records, its words and `make run`'s opening.

This package re-exports exactly the public names the single module
`supervisor/demo/fleet.py` had, so that its callers import them from here as before.
"""

from .demo import DEMO_DETECTION, DEMO_DURATIONS, DEMO_OPENING, DEMO_RATE, OPENING_SPAN
from .engine import (
    DEFAULT_START,
    EXPECTED_FLAGS,
    FAILURES,
    HEALTHY_SHAPES,
    PAIRED,
    PARENT_THREAD_FLAGS,
    PASSING_FLAGS,
    REMOTE_ONLY,
    THREAD_FLAGS,
    Fleet,
)
from .records import ORIGIN_ENV, REMOTE_ENVS, FleetTask, ThreadState, stamp
from .texts import (
    ACCOUNT_LIMITS,
    ACTIVITY_NOTES,
    PARENT_TITLES,
    PROVIDERS,
    REAL_FAILURES,
    TRANSIENT_ERRORS,
    WORKS,
    Work,
)

__all__ = [
    "ACCOUNT_LIMITS",
    "ACTIVITY_NOTES",
    "DEFAULT_START",
    "DEMO_DETECTION",
    "DEMO_DURATIONS",
    "DEMO_OPENING",
    "DEMO_RATE",
    "EXPECTED_FLAGS",
    "FAILURES",
    "HEALTHY_SHAPES",
    "OPENING_SPAN",
    "ORIGIN_ENV",
    "PAIRED",
    "PARENT_THREAD_FLAGS",
    "PARENT_TITLES",
    "PASSING_FLAGS",
    "PROVIDERS",
    "REAL_FAILURES",
    "REMOTE_ENVS",
    "REMOTE_ONLY",
    "THREAD_FLAGS",
    "TRANSIENT_ERRORS",
    "WORKS",
    "Fleet",
    "FleetTask",
    "ThreadState",
    "Work",
    "stamp",
]
