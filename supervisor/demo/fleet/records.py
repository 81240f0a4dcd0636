"""What the fleet keeps and hands around: the tasks it delegated (`FleetTask`, which the
manifest lists), what it knows of each thread, and the launcher's plan of an episode."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

ORIGIN_ENV = "origin"
REMOTE_ENVS = ("linked-box-1", "linked-box-2")


@dataclass
class FleetTask:
    """A task the fleet delegated, with what it carries and what Supervisor must flag."""

    task: str
    title: str
    prompt: str
    parent_thread: str
    child_thread: str
    mode: str
    env: str  # where its delegation and reports come from
    child_env: str
    shape: str
    failure: str | None
    expected_flags: list[str]
    delegated_at: str
    passing_flags: list[str] = field(default_factory=list)  # raised, resolved by `until`
    parent_task: str | None = None  # a reviewer's: the task whose child asked for it
    cancelled: bool = False  # an answer to a cancel action stopped its child
    wait_run: str | None = None  # mode wait: the parent run waiting on its result
    report: str | None = None  # the status of its latest report

    def as_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "title": self.title,
            "parent_thread": self.parent_thread,
            "child_thread": self.child_thread,
            "mode": self.mode,
            "env": self.env,
            "child_env": self.child_env,
            "shape": self.shape,
            "failure": self.failure,
            "expected_flags": list(self.expected_flags),
            "passing_flags": list(self.passing_flags),
            "delegated_at": self.delegated_at,
            "parent_task": self.parent_task,
        }


@dataclass
class ThreadState:
    """What the fleet knows of a thread: its environment, runs and the ones not finished."""

    thread: str
    env: str
    runs: dict[str, int] = field(default_factory=dict)  # run id -> ordinal
    active: list[str] = field(default_factory=list)  # requested, not finished, oldest first
    wakes: int = 0  # wakes queued for it so far (for ids)
    items: int = 0

    @property
    def max_ordinal(self) -> int:
        return max(self.runs.values(), default=0)


@dataclass
class Plan:
    """An episode decided by the launcher: who delegates, what, carrying which failure."""

    parent: str
    failure: str | None
    shape: str
    mode: str
    remote: str | None  # the child's environment when remote
    reviewers: int  # grandchild tasks the child delegates
    size: int  # tasks it delegates in all


def stamp(moment: datetime) -> str:
    """RFC 3339 in UTC with milliseconds, as the scenarios write it."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
