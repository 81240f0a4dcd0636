"""orphan_wake: the child completes as a simple one, and the completion's wake names a
task id that was never delegated (seed 002's wake)."""

from __future__ import annotations

from ..engine import Engine
from ..records import FleetTask, Plan, failing
from ..texts import Work
from .healthy import simple

EPISODE = failing(
    "orphan_wake",
    # Its result reaches the parent through a wake naming a task never delegated: after
    # `orphan_grace` the wake sits on the task whose child thread sent it.
    opens=("orphan_wake",),
    paired=False,
    remote_only=False,
)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    slug = task.task.rsplit("%3A", 1)[1]
    named = f"node:delegated-task:provider-continuation%3A{fleet.tag}%3A{slug}"
    yield from simple.flow(fleet, task, run, work, ref, plan, named_task=named)
