"""monitor: as background, with a monitor (its `awaited` unsaid) whose end wakes run 2."""

from __future__ import annotations

from ...engine import Engine
from ...records import FleetTask, Plan, healthy
from ...texts import Work
from .background import then_run_2

EPISODE = healthy("monitor", weight=2, may_be_remote=True)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    label = f"Monitor: {work.command}"
    yield from then_run_2(fleet, task, run, work, ref, "monitor", None, label)
