"""serialized_wait (seed 003): two wait calls emitted together; the second reaches the
orchestrator only after the first wait returns, more than `dispatch_lag` after it was
emitted. The first delegation of the pair is healthy."""

from __future__ import annotations

from ..engine import Engine
from ..records import ORIGIN_ENV, Plan, failing
from ..steps import await_or_end, delegate
from ..texts import WORKS, Work
from .healthy import simple

EPISODE = failing(
    "serialized_wait",
    # Its delegation's `at` is more than `dispatch_lag` after its `requested_at`.
    opens=("dispatch_lag",),
    paired=True,
    remote_only=False,
)


def after_turn(fleet: Engine, plan: Plan, work: Work, ref: str, prun: str):
    parent = plan.parent
    child_env = plan.remote or ORIGIN_ENV
    first, run1 = yield from delegate(
        fleet,
        work,
        f"{ref}a",
        parent,
        prun,
        mode="wait",
        child_env=child_env,
        shape="simple",
        failure=None,
        requested_lag=0.01,
    )
    await_or_end(fleet, first, parent, prun, waits=2)
    fleet.later(simple.flow(fleet, first, run1, work, f"{ref}a", plan), 0, owner=first)
    emitted_gap = fleet.uniform(0.5, 2.5)
    # Its `requested_at` is the parent's emission, just after the first's.
    held = emitted_gap + fleet.settings.dispatch_lag + fleet.uniform(3, 12)
    yield held
    next_work = WORKS[(WORKS.index(work) + 1) % len(WORKS)]
    second, run2 = yield from delegate(
        fleet,
        next_work,
        f"{ref}b",
        parent,
        prun,
        mode="wait",
        child_env=child_env,
        shape="simple",
        failure=EPISODE,
        requested_lag=held - emitted_gap + 0.01,
    )
    second.wait_run = prun
    fleet.later(simple.flow(fleet, second, run2, next_work, f"{ref}b", plan), 0, owner=second)
