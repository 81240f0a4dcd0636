"""What the fleet keeps and hands around: the tasks it delegated (`FleetTask`, which the
manifest lists), what it knows of each thread, the launcher's plan of an episode, and
what an episode module declares about itself (`Episode`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

ORIGIN_ENV = "origin"
REMOTE_ENVS = ("linked-box-1", "linked-box-2")

# How often an episode's child asks for reviewers (grandchild tasks).
NEVER, SOMETIMES, ALWAYS = 0.0, 0.5, 1.0


@dataclass(frozen=True)
class Episode:
    """An episode module's `EPISODE`: the failure it carries and the flags Supervisor
    must show for it (contract §5), and how the launcher plans it. Its coroutine is the
    module's `flow` (the task's life after its delegation) or `after_turn` (all that
    follows the parent's turn, when it is not one plain delegation)."""

    shape: str  # what the plan calls it: the failure's name, or a healthy shape
    failure: str | None = None  # None: healthy
    opens: tuple[str, ...] = ()  # flag kinds open on its task at `until` (EXPECTED_FLAGS)
    passing: tuple[str, ...] = ()  # raised on its task and resolved before `until`
    child_thread_opens: tuple[str, ...] = ()  # on its child thread (THREAD_FLAGS)
    parent_thread_opens: tuple[str, ...] = ()  # on its parent thread (PARENT_THREAD_FLAGS)
    paired: bool = False  # two delegations, the first of them healthy
    remote_only: bool = False  # its child is always on another environment
    may_be_remote: bool = False  # its child is on another environment at `remote_share`
    # The delegation's mode; of two, the second in six draws of ten.
    modes: tuple[str, ...] = ("async",)
    own_parent: bool = False  # a lead of its own, whom no other task's wake wakes
    reviewers: float = NEVER  # ALWAYS, or SOMETIMES in episodes the opening does not script
    weight: int = 0  # a healthy shape's share of the healthy episodes


def failing(
    name: str, *, opens: tuple[str, ...], paired: bool, remote_only: bool, **more: Any
) -> Episode:
    """A failure's episode: it says what it opens and whether it is paired or remote."""
    return Episode(name, failure=name, opens=opens, paired=paired, remote_only=remote_only, **more)


def healthy(shape: str, *, weight: int, **more: Any) -> Episode:
    """A healthy shape: it opens nothing; `weight` is its share of healthy episodes."""
    return Episode(shape, weight=weight, **more)


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
