"""delegation_never_started (Codex #24951): the parent's delegate call hangs before any
child exists; no delegation and no refusal ever answers its request. After a while the
parent asks again, under a new request id, and that delegation goes through: the
episode's task, which goes on as a simple one."""

from __future__ import annotations

from ..engine import Engine
from ..records import ORIGIN_ENV, Plan, failing
from ..steps import delegated
from ..texts import Work
from .healthy import simple

EPISODE = failing(
    "delegation_never_started",
    # The task itself is healthy: it is the parent's second try. Its first request hung
    # with no child and flags the parent thread.
    opens=(),
    parent_thread_opens=("delegation_never_started",),
    paired=False,
    remote_only=False,
)


def after_turn(fleet: Engine, plan: Plan, work: Work, ref: str, prun: str):
    parent = plan.parent
    number = next(fleet.task_numbers)
    fleet.thread_flags[parent] = sorted(EPISODE.parent_thread_opens)
    fleet.request_task(
        parent, prun, f"{fleet.tag}-req-{number}-hung", work.title.format(ref=ref), ORIGIN_ENV
    )
    fleet.falls_due(fleet.now + fleet.settings.spawn_timeout)
    yield fleet.span(5, 30)
    yield from delegated(fleet, plan, work, ref, prun, simple.flow, EPISODE)
