"""Kinds that open on a task at one time if nothing arrives (a grace after some end):
each rule says, per task, when it would open and with which finding; these helpers turn
that into what is open now and what is due later."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from supervisor.core.facts.ownership import judged_tasks
from supervisor.core.facts.snapshot import DetectionSettings, Finding, Snapshot, TaskView

TaskDue = Callable[[Snapshot, DetectionSettings, TaskView], tuple[datetime, Finding] | None]


def opened(snap: Snapshot, settings: DetectionSettings, now: datetime, due: TaskDue) -> list:
    found = [due(snap, settings, task) for task in judged_tasks(snap)]
    return [finding for when, finding in filter(None, found) if when <= now]


def coming(snap: Snapshot, settings: DetectionSettings, now: datetime, due: TaskDue) -> dict:
    """(subject type, id) -> the later time at which the kind opens there, if nothing
    arrives."""
    later = {}
    for task in judged_tasks(snap):
        found = due(snap, settings, task)
        if found is not None and found[0] > now:
            later[("task", task.id)] = found[0]
    return later
