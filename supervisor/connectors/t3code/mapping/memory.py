"""What the mapping remembers between rows: one typed section per kind of thing seen.

T3 rewrites whole entities in place, so each row is diffed against what was seen last.
The follower stores the memory beside its cursor as a JSON-able dict, one key per
section; `Memory.from_dict` reads that dict, `to_dict` gives it back. Memories stored
before sections were typed load unchanged: the sections keep the entries as they were
written (lists stay positional, a task's keys stay optional), and keys this code does
not know are kept as they were.

A section is the stored dict's own object, not a copy (memory holds tens of thousands
of entries and is read once per batch): handlers change sections in place and never
replace one, so the dict `to_dict` gives, and any taken from it before, see every change.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, NotRequired, TypedDict

# Bounds on what memory keeps of things that may never be settled.
KEEP_TASKS = 50_000
KEEP_NATIVES = 20_000
KEEP_MESSAGES = 20_000
KEEP_RUNS = 20_000
# Finished runs, for a late rewrite (a rollback) and a wait call's transfer: both come
# soon after; memory is stored with every batch, so this stays small.
KEEP_ENDED = 1_000
KEEP_DEPARTED = 20
KEEP_TRANSFERS = 20_000
KEEP_TASK_WAKES = 20  # a task's wakes, until T3 settles its delivery
KEEP_REQUESTS = 5_000  # delegate_task calls, until their task is known (a hang: never)


class Task(TypedDict):
    """An `app_owned` subagent: what was told of it, and what telling it again needs."""

    parent: str
    run: str | None  # the delegating run
    child: str | None
    at: str  # when it was delegated
    status: str | None  # the contract's status last reported
    result: str | None
    result_run: str | None
    waits: bool | None  # wait mode (the result goes back in the call); None: not stored
    request: NotRequired[str | None]  # the delegating call's client_request_id
    said: NotRequired[list[str]]  # [title, prompt], to tell again once a call names it
    told: NotRequired[str | None]  # the child thread the delegation was told with
    told_request: NotRequired[str | None]
    late_request: NotRequired[int]  # 1: a call named it after it was told
    record: NotRequired[str | None]  # T3's delivery record (`completionDelivery.state`)
    cut: NotRequired[int | None]  # 1: cancelled by a restart's recovery
    read: NotRequired[int]  # 1: the acknowledged read was told
    settled: NotRequired[list[Any]]  # [state, at, observing run]: its delivery settled
    wakes: NotRequired[dict[str, list[Any]]]  # wake -> [message, run]: until settled


class Native(TypedDict):
    """A `provider_native` subagent: one background item per run it works in."""

    thread: str
    item: str
    run: str | None
    generation: int
    finished: bool
    child: str | None
    title: str | None


class Roster(TypedDict):
    """A provider thread's `pendingBackgroundTasks`, as last listed."""

    thread: str
    tasks: dict[str, list[Any]]  # task id -> [kind, description, child thread]


class Run(TypedDict):
    """A run not yet finished (or finished before it was requested)."""

    requested: bool
    started: bool
    activity: int | None  # the 30 s bucket of the last run.activity told
    started_at: NotRequired[str]
    held: NotRequired[dict[str, Any]]  # its row, until its start message is read
    wakes: NotRequired[list[str]]  # wakes it delivers when it starts
    finished: NotRequired[bool]  # finished unrequested: forgotten once requested


class Request(TypedDict):
    """An agent's delegate_task call, until the task it made is known."""

    thread: str
    run: str | None
    title: str | None
    task: str | None
    refused: NotRequired[int]  # 1: told as tool.rejected


# A message a run may name as its start: a notice's [wakes, delivered (0/1)], or "m" (a
# message) / "s" (a scheduled task's).
StartMessage = list[Any] | str
# A roster entry or native subagent that left: [item, kind, description, child, left at].
Departure = list[Any]
# A run's failure, for its task's report: [thread, error, class] (older: [thread, error]).
Failure = list[Any]
# A command item that may outlive its run: [thread, run, label, started at, told (0/1)].
Command = list[Any]


@dataclass(frozen=True, slots=True)
class Memory:
    """The sections, each keyed by T3's id of what it remembers (frozen: a section is
    changed in place, never replaced; see the module's docstring)."""

    tasks: dict[str, Task] = field(default_factory=dict)
    children: dict[str, str] = field(default_factory=dict)  # child thread -> first task
    natives: dict[str, Native] = field(default_factory=dict)
    rosters: dict[str, Roster] = field(default_factory=dict)  # by provider thread
    departed: dict[str, list[Departure]] = field(default_factory=dict)  # by app thread
    messages: dict[str, StartMessage] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)
    texts: dict[str, list[str]] = field(default_factory=dict)  # run -> [when, its text]
    pending: dict[str, list[str]] = field(default_factory=dict)  # start message -> runs
    transfers: dict[str, int] = field(default_factory=dict)  # -> what it told (bits)
    errors: dict[str, str] = field(default_factory=dict)  # run -> its error item's message
    failures: dict[str, Failure] = field(default_factory=dict)  # failed run -> its failure
    classes: dict[str, str] = field(default_factory=dict)  # run -> its failure class
    requests: dict[str, Request] = field(default_factory=dict)  # by client_request_id
    cohorts: dict[str, int] = field(default_factory=dict)  # run -> settled deliveries
    commands: dict[str, Command] = field(default_factory=dict)  # by turn item
    ended: dict[str, str] = field(default_factory=dict)  # finished run -> when
    build: dict[str, int] = field(default_factory=dict)  # {"roster": 1}: it lists work
    others: dict[str, Any] = field(default_factory=dict)  # keys not known here, kept

    @classmethod
    def from_dict(cls, stored: dict) -> Memory:
        """The memory as the follower stored it; a section it lacks starts empty."""
        known = {name: stored[name] for name in SECTIONS if name in stored}
        others = {key: value for key, value in stored.items() if key not in SECTIONS}
        return cls(**known, others=others)

    def to_dict(self) -> dict:
        """The JSON-able dict the follower stores: each section under its name."""
        stored = {name: getattr(self, name) for name in SECTIONS}
        stored.update(self.others)
        return stored


SECTIONS = tuple(f.name for f in fields(Memory) if f.name != "others")


def bound(section: dict, limit: int) -> None:
    """Forget the oldest entries past `limit` (dicts keep insertion order)."""
    while len(section) > limit:
        del section[next(iter(section))]


def keep_only(section: dict, wanted: dict) -> None:
    """Forget the entries whose key `wanted` lacks, in place (see the module's docstring)."""
    for key in [key for key in section if key not in wanted]:
        del section[key]
