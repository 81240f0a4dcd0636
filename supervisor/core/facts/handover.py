"""What the parent was given for a task, the task's latest result, and whether and how
each reached the parent: read once, here, so that the task page's panels, the API and
the delivery flags' evidence cannot contradict one another.

Pure over a Snapshot, from the facts the rules read (contract §4). Where the contract's
notions part (a text "handed" by a terminal report; "reached" by a queued wake; for an
orchestrator that says `delivery: "wake"`, only a task wake of T that was delivered or
a delivery by hand), the reading takes the one an operator means by "the parent has
it", and never says so where a delivery flag says it does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from supervisor.core.facts import ownership
from supervisor.core.facts.ownership import normalized
from supervisor.core.facts.snapshot import RunView, Snapshot, TaskView, WakeView

# Supervisor's own header of a delivery by hand (core.actions.delivery_text).
_SUPERVISOR_HEADER = re.compile(
    r"\A\[Result of task .*, run (?P<run>\S+), delivered by hand via Supervisor\]\s*\n",
    re.DOTALL,
)


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
        return self.latest is not None and normalized(given.text) == normalized(self.latest.text)

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
    report = task.current_report
    by_wake_only = report is not None and report.delivery == "wake"
    latest_run = ownership.latest_result_run(snap, task)
    entries: list[Given] = []
    for wake in _wakes_to_parent(snap, task):
        if wake.source_kind == "task" and wake.source_task == task.id and wake.summary is not None:
            reached = wake.delivered or not by_wake_only
            entries.append(Given(wake.summary, (f"wake {wake.id}",), reached))
        elif wake.source_kind == "manual" and wake.source_task == task.id and wake.summary:
            run, text = delivered_by_hand(snap, task, wake)
            via = f"delivery by hand (wake {wake.id})"
            entries.append(Given(text, (via,), True, run=run.id if run else None, by_hand=True))
            if run is not None and (
                latest_run is None or (run.ordinal or 0) > (latest_run.ordinal or 0)
            ):
                latest_run = run  # a later run delivered by hand is what the parent holds
    for r in sorted(task.reports, key=lambda r: (r.at, r.event_id)):
        if r.terminal and r.summary is not None:
            why_not = ""
            if by_wake_only:
                why_not = "the orchestrator hands results by wake only, and none was delivered"
            elif r.cause == "restart":
                why_not = "the orchestrator's restart ended the task, and it sends no wake for it"
            entries.append(Given(r.summary, (f"report {r.status}",), not why_not, why_not=why_not))
    latest = _latest(snap, task, latest_run, entries, by_wake_only)
    if (
        latest is not None
        and latest.reached
        and not any(g.reached and normalized(g.text) == normalized(latest.text) for g in entries)
    ):
        # Brought by another task's wake (a follow-up's): it is what the parent holds too.
        entries.append(Given(latest.text, (latest.via or latest.how,), True))
    return Handover(tuple(_merged(entries)), latest, by_wake_only)


def run_reached(snap: Snapshot, task: TaskView, run: RunView) -> bool:
    """Whether `run`'s result reached the parent, as the reading says it: for the words of
    a flag that names a run other than the reading's latest (one delivered by hand)."""
    reading = read(snap, task)
    if reading.latest is not None and reading.latest.run == run.id:
        return reading.latest.reached
    latest = _latest(snap, task, run, list(reading.given), reading.by_wake_only)
    return latest is not None and latest.reached


def _latest(snap, task, run: RunView | None, entries, by_wake_only: bool) -> Latest | None:
    if run is None or not (run.summary or "").strip():
        return None
    wanted = normalized(run.summary)
    owned = ownership.owning(snap, task, run).owned
    for given in entries:
        if given.reached and given.by_hand and given.run == run.id:
            how = f"by {given.via[0]}"
            return Latest(run.summary, run.id, True, how, by_hand=not owned, via=given.via[0])
    # T's own wakes first: another task's wake with the same words is only a fallback.
    wakes = sorted(_wakes_to_parent(snap, task), key=lambda w: w.source_task != task.id)
    for wake in wakes:
        carried = normalized(wake.summary)
        if carried is None:
            continue
        own = wake.source_task == task.id
        via = f"wake {wake.id}" + ("" if own else f" (task {wake.source_task})")
        if wake.source_kind == "manual" and wanted in carried and (own or not by_wake_only):
            return Latest(run.summary, run.id, True, f"by hand (wake {wake.id})", via=via)
        if wake.source_kind == "task" and carried == wanted and (own or not by_wake_only):
            if wake.delivered:
                return Latest(run.summary, run.id, True, f"by {via}", via=via)
            if not by_wake_only:
                how = f"by {via}, queued for the parent, which has not taken it yet"
                return Latest(run.summary, run.id, True, how, via=via)
    for given in entries:
        if given.reached and not given.by_hand and normalized(given.text) == wanted:
            return Latest(run.summary, run.id, True, f"by the {given.via[0]}", via=given.via[0])
    why = next(
        (g.why_not for g in entries if g.why_not and normalized(g.text) == wanted),
        "no wake or terminal report carried it",
    )
    if by_wake_only:
        why = "the orchestrator hands results by wake only, and no wake of it was delivered"
    return Latest(run.summary, run.id, False, why)


def delivered_by_hand(snap: Snapshot, task: TaskView, wake: WakeView) -> tuple[RunView | None, str]:
    """The run a delivery by hand carried and its text without the delivery's header:
    the run Supervisor's header names, else the child's result the text contains (the
    longest, then the latest); else no run, and the text as sent."""
    text = wake.summary or ""
    results = [
        r
        for r in snap.runs_by_thread.get(ownership.child_thread(snap, task) or "", [])
        if ownership.has_result(r)
    ]
    header = _SUPERVISOR_HEADER.match(text)
    if header:
        named = next((r for r in results if r.id == header["run"]), None)
        if named is not None:
            return named, named.summary
    carried = normalized(text) or ""
    inside = [r for r in results if normalized(r.summary) in carried]
    if inside:
        run = max(inside, key=lambda r: (len(normalized(r.summary)), r.ordinal or 0))
        return run, run.summary
    return None, text[header.end() :].strip() if header else text


def _merged(entries: list[Given]) -> list[Given]:
    """One entry per text (compared as the contract compares texts), in first-seen order."""
    by_text: dict[str, Given] = {}
    for g in entries:
        key = normalized(g.text) or ""
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


def _wakes_to_parent(snap: Snapshot, task: TaskView) -> list[WakeView]:
    wakes = snap.wakes_by_target.get(task.parent_thread or "", [])
    return sorted(wakes, key=lambda w: (w.queued_at or ownership.LATEST, w.id))
