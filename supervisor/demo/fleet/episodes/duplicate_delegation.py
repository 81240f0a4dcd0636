"""duplicate_delegation: the parent delegates the same work again (same title and
prompt, another child) while the first child's run is still going; both finish and are
delivered. The first delegation of the pair is healthy."""

from __future__ import annotations

from ..engine import Engine
from ..records import ORIGIN_ENV, Plan, failing
from ..steps import await_or_end, delegate
from ..texts import Work
from .healthy import simple

EPISODE = failing(
    "duplicate_delegation",
    # Same parent, title and prompt as an earlier task whose child run was unfinished at
    # this delegation's `at`: raised on the later task.
    opens=("duplicate_delegation",),
    paired=True,
    remote_only=False,
)


def after_turn(fleet: Engine, plan: Plan, work: Work, ref: str, prun: str):
    parent = plan.parent
    span = fleet.span(400, 900)
    first, run1 = yield from delegate(
        fleet,
        work,
        ref,
        parent,
        prun,
        mode="async",
        child_env=ORIGIN_ENV,
        shape="simple",
        failure=None,
    )
    await_or_end(fleet, first, parent, prun)
    fleet.later(simple.flow(fleet, first, run1, work, ref, plan, span=span), 0, owner=first)
    yield fleet.span(120, span / fleet.durations - 120)
    prun2 = yield from fleet.parent_turn(parent)
    yield fleet.span(1, 5)
    second, run2 = yield from delegate(
        fleet,
        work,
        ref,
        parent,
        prun2,
        mode="async",
        child_env=ORIGIN_ENV,
        shape="simple",
        failure=EPISODE,
        title=first.title,
        prompt=first.prompt,
    )
    await_or_end(fleet, second, parent, prun2)
    # Its own texts: the same words from two children would reach the parent as one.
    fleet.later(simple.flow(fleet, second, run2, work, f"{ref}/2", plan), 0, owner=second)
