"""The demo fleet: a deterministic stream of an orchestrator fleet's events, healthy
work mixed with the field reports' failures (`launcher.Fleet`, whose docstring says
more).

- `engine`: the virtual clock, the heap of coroutines and the event emitters;
- `launcher`: `Fleet`, the engine with its launcher, manifest and answers' hooks;
- `steps`: a task's delegation, reports and result handed to the parent;
- `episodes/`: one module per failure and per healthy shape, and their registry;
- `records`, `texts`, `demo`: the fleet's records, its words, `make run`'s opening.

This package re-exports exactly the public names the single module
`supervisor/demo/fleet.py` had, so that its callers import them from here as before.
"""

from .demo import DEMO_DETECTION, DEMO_DURATIONS, DEMO_OPENING, DEMO_RATE, OPENING_SPAN
from .episodes import (
    EXPECTED_FLAGS,
    FAILURES,
    HEALTHY_SHAPES,
    PAIRED,
    PARENT_THREAD_FLAGS,
    PASSING_FLAGS,
    REMOTE_ONLY,
    THREAD_FLAGS,
)
from .launcher import DEFAULT_START, Fleet
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
