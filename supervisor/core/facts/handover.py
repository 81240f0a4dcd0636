"""What the parent was given for a task and the task's latest result, as the task page's
two panels, the API's `handover` and the alerts show them: one entry per text (texts
compared as the contract compares them), a delivery by hand's header left out.

Reads `core.facts.reading`, **as the operator sees it** (where the contract's notions
part: a terminal report under `delivery: "wake"`, a report ended by a restart, a later
run delivered by hand); decides nothing of its own, so that the panels, the API and the
delivery flags' evidence cannot contradict one another.
"""

from __future__ import annotations

from dataclasses import dataclass

from supervisor.core.facts import reading
from supervisor.core.facts.snapshot import Snapshot, TaskView


@dataclass(frozen=True)
class Given:
    """One text handed to the parent for T (a hand delivery's header left out), the ways
    it went, and whether it reached the parent."""

    text: str
    via: tuple[str, ...]
    reached: bool
    run: str | None = None  # the run a delivery by hand carried, when known
    by_hand: bool = False
    why_not: str = ""  # why a text handed by a report did not reach the parent

    def as_json(self) -> dict:
        return {
            "text": self.text,
            "via": list(self.via),
            "reached_parent": self.reached,
            "run": self.run,
            "by_hand": self.by_hand,
        }


@dataclass(frozen=True)
class Latest:
    """T's latest result: its run, whether it reached the parent, and how."""

    text: str
    run: str
    reached: bool
    how: str  # "by wake w1", "by hand (wake m1)", "by the report completed", or why not
    by_hand: bool = False  # a later run that an operator delivered by hand
    via: str | None = None  # the wake or report that brought it

    def as_json(self) -> dict:
        return {
            "text": self.text,
            "run": self.run,
            "reached_parent": self.reached,
            "how": self.how,
            "by_hand": self.by_hand,
        }


@dataclass(frozen=True)
class Handover:
    given: tuple[Given, ...]
    latest: Latest | None
    by_wake_only: bool  # the orchestrator hands results to the parent by wakes alone

    @property
    def reached(self) -> tuple[Given, ...]:
        return tuple(g for g in self.given if g.reached)

    @property
    def not_reached(self) -> tuple[Given, ...]:
        return tuple(g for g in self.given if not g.reached)

    def same_as_latest(self, given: Given) -> bool:
        return self.latest is not None and reading.same_text(given.text, self.latest.text)

    def as_json(self) -> dict:
        return {
            "given": [g.as_json() for g in self.given],
            "latest": self.latest.as_json() if self.latest else None,
            "by_wake_only": self.by_wake_only,
        }


def read(snap: Snapshot, task: TaskView) -> Handover:
    key = ("handover", task.id)
    if key not in snap.memo:
        snap.memo[key] = _read(snap, task)
    return snap.memo[key]


def _read(snap: Snapshot, task: TaskView) -> Handover:
    found = reading.read(snap, task)
    entries = [
        Given(
            h.given,
            (h.via,),
            h.reached_as_operator_sees_it,
            run=h.run.id if h.by_hand and h.run is not None else None,
            by_hand=h.by_hand,
            why_not=h.why_not,
        )
        for h in found.handings
        if h.text or not h.by_hand  # a delivery by hand without text gave the parent nothing
    ]
    run, reach = found.latest_as_operator, found.latest_reach
    latest = None
    if reach is not None:
        latest = Latest(
            run.summary, run.id, reach.reached, reach.how, by_hand=reach.by_hand, via=reach.via
        )
    if (
        latest is not None
        and latest.reached
        and not any(g.reached and reading.same_text(g.text, latest.text) for g in entries)
    ):
        # Brought by another task's wake (a follow-up's): it is what the parent holds too.
        entries.append(Given(latest.text, (latest.via or latest.how,), True))
    return Handover(tuple(_merged(entries)), latest, found.by_wake_only)


def _merged(entries: list[Given]) -> list[Given]:
    """One entry per text (compared as the contract compares texts), in first-seen order."""
    by_text: dict[str, Given] = {}
    for g in entries:
        key = reading.normalized(g.text) or ""
        seen = by_text.get(key)
        if seen is None:
            by_text[key] = g
            continue
        by_text[key] = Given(
            seen.text,
            tuple(dict.fromkeys(seen.via + g.via)),
            seen.reached or g.reached,
            seen.run or g.run,
            seen.by_hand or g.by_hand,
            "" if seen.reached or g.reached else seen.why_not or g.why_not,
        )
    return list(by_text.values())
