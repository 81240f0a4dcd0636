"""A task's reading: every handing to its parent, whether and how it reached it, and the
latest result; decided here and nowhere else.

A handing is a task wake of T to T's parent thread, a delivery by hand of T (a manual
wake naming T) or a terminal report of T. They are computed once per task and snapshot
(memoised on the snapshot, as `core.facts.owning` memoises owned runs) and read, through
the named predicates below, by the rules, the task page's panels and the API
(`core.facts.handover`), the alerts, the actions and the audit; each reader says which
meaning it reads. A test (tests/core/facts/test_reading_is_the_only_reader.py) fails on
code elsewhere that decides it.

The meanings, each with its source:

- **by the contract** (docs/event-contract.md §4): a text reached the parent when a wake
  queued to the parent carries it (a task wake, of any task, with that text; a manual
  wake that contains it), taken or not. T's latest result is the summary of its owned
  finished run with the highest ordinal and a summary; a text was handed for T when a
  task wake of T or a terminal report of T carries it. The flags' raise and resolve
  conditions read this meaning (§5).
- **delivered** (§4, its last two notions): a task wake of T to the parent was
  delivered, or a delivery by hand of T was made. `never_delivered` reads it, and
  `misrouted_wake` for a task without a latest result.
- **as the operator sees it** (docs/decisions.md, "Issue 30: one reading of what the
  parent holds"): under a current report that says `delivery: "wake"` only a delivered
  task wake of T or a delivery by hand brings a text; elsewhere a terminal report hands
  its text, unless it says `cause: "restart"`; a later run of the child delivered by
  hand for T is the latest result. The panels, the alerts and the flags' evidence words
  read it, so that no page says "it has reached the parent" beside a delivery flag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime

from supervisor.core.facts.owning import LATEST, child_thread, owned_runs, owning
from supervisor.core.facts.snapshot import ReportView, RunView, Snapshot, TaskView, WakeView

# How a text was handed to the parent.
WAKE = "wake"
REPORT = "report"
BY_HAND = "by hand"

# Supervisor's own header of a delivery by hand (core.actions.writers.delivery_text).
_SUPERVISOR_HEADER = re.compile(
    r"\A\[Result of task .*, run (?P<run>\S+), delivered by hand via Supervisor\]\s*\n",
    re.DOTALL,
)


def normalized(text: str | None) -> str | None:
    """A text as the contract compares it (§4): trimmed, white space collapsed."""
    if text is None:
        return None
    return " ".join(text.split())


def same_text(a: str | None, b: str | None) -> bool:
    """Two texts the contract counts as one (both known, equal once normalized)."""
    return a is not None and b is not None and normalized(a) == normalized(b)


def has_result(run: RunView) -> bool:
    """A finished run with a summary that is not empty once trimmed: an empty summary is
    no result (contract 1.1; a run cut short often ends with "")."""
    return run.finished and bool((run.summary or "").strip())


@dataclass(frozen=True)
class Handing:
    """One text handed to T's parent for T: how, when, whether delivered, the run whose
    result it carries, and whether it reached the parent as the operator sees it."""

    how: str  # WAKE | REPORT | BY_HAND
    via: str  # "wake w1", "report completed", "delivery by hand (wake m1)"
    text: str  # as it went; "" for a delivery by hand that carried none
    given: str  # as the child wrote it: a delivery by hand's header left out
    at: datetime | None  # when queued (a wake) or reported (a report)
    event_id: str | None
    delivered: bool  # a wake whose wake.delivered arrived; a report is never "delivered"
    run: RunView | None  # the run whose result it carries, when one is known
    reached_as_operator_sees_it: bool
    why_not: str = ""  # why a report's text did not reach the parent, as the operator sees it
    wake: WakeView | None = None
    report: ReportView | None = None

    @property
    def by_hand(self) -> bool:
        return self.how == BY_HAND


@dataclass(frozen=True)
class Reach:
    """Whether a run's result reached the parent as the operator sees it, and how."""

    reached: bool
    how: str  # "by wake w1", "by hand (wake m1)", "by the report completed", or why not
    via: str | None = None  # the wake or report that brought it
    by_hand: bool = False  # a run the task does not own, delivered by hand for it


@dataclass(frozen=True)
class Reading:
    """What `read` computes once per task and snapshot."""

    to_parent: tuple[WakeView, ...]  # every wake queued to T's parent thread, by queue time
    handings: tuple[Handing, ...]  # T's wakes to the parent by queue time, then its reports
    by_wake_only: bool  # T's current report says `delivery: "wake"`
    latest_by_contract: RunView | None
    latest_as_operator: RunView | None
    latest_reach: Reach | None  # how `latest_as_operator` reached the parent


def read(snap: Snapshot, task: TaskView) -> Reading:
    """T's reading, computed once per snapshot."""
    key = ("reading", task.id)
    if key not in snap.memo:
        snap.memo[key] = _read(snap, task)
    return snap.memo[key]


def _read(snap: Snapshot, task: TaskView) -> Reading:
    report = task.current_report
    by_wake_only = report is not None and report.delivery == "wake"
    to_parent = tuple(
        sorted(
            snap.wakes_by_target.get(task.parent_thread or "", []),
            key=lambda w: (w.queued_at or LATEST, w.id),
        )
    )
    owned = owned_runs(snap, task)
    handings = [_wake_handing(snap, task, w, owned, by_wake_only) for w in to_parent]
    handings = [h for h in handings if h is not None]
    for r in sorted(task.reports, key=lambda r: (r.at, r.event_id)):
        if not r.terminal or r.summary is None:
            continue
        why_not = ""
        if by_wake_only:
            why_not = "the orchestrator hands results by wake only, and none was delivered"
        elif r.cause == "restart":
            why_not = "the orchestrator's restart ended the task, and it sends no wake for it"
        run = _owned_run_with_text(owned, r.summary)
        handings.append(
            Handing(
                REPORT,
                f"report {r.status}",
                r.summary,
                r.summary,
                r.at,
                r.event_id,
                delivered=False,
                run=run,
                reached_as_operator_sees_it=not why_not,
                why_not=why_not,
                report=r,
            )
        )
    results = [run for run in owned if has_result(run)]
    latest = results[-1] if results else None
    seen = latest  # a later run delivered by hand is what the parent holds
    for run in (h.run for h in handings if h.by_hand and h.text and h.run is not None):
        if seen is None or (run.ordinal or 0) > (seen.ordinal or 0):
            seen = run
    reading = Reading(to_parent, tuple(handings), by_wake_only, latest, seen, latest_reach=None)
    return replace(reading, latest_reach=_reach(snap, task, seen, reading))


def _wake_handing(snap, task, wake: WakeView, owned, by_wake_only: bool) -> Handing | None:
    """A wake to the parent as a handing for T: a task wake of T with a text, or any
    delivery by hand of T; None for the rest."""
    if wake.source_task != task.id:
        return None
    if wake.source_kind == "task" and wake.summary is not None:
        run = _owned_run_with_text(owned, wake.summary)
        return Handing(
            WAKE,
            f"wake {wake.id}",
            wake.summary,
            wake.summary,
            wake.queued_at,
            wake.queued_event,
            wake.delivered,
            run,
            reached_as_operator_sees_it=wake.delivered or not by_wake_only,
            wake=wake,
        )
    if wake.source_kind == "manual":
        run, given = _carried_by_hand(snap, task, wake)
        return Handing(
            BY_HAND,
            f"delivery by hand (wake {wake.id})",
            wake.summary or "",
            given,
            wake.queued_at,
            wake.queued_event,
            wake.delivered,
            run,
            reached_as_operator_sees_it=True,
            wake=wake,
        )
    return None


def _owned_run_with_text(owned: list[RunView], text: str | None) -> RunView | None:
    """The owned finished run with the highest ordinal whose summary is `text` (§4)."""
    wanted = normalized(text)
    same = [run for run in owned if run.finished and normalized(run.summary) == wanted]
    return same[-1] if same and wanted is not None else None


def _carried_by_hand(snap: Snapshot, task: TaskView, wake: WakeView) -> tuple[RunView | None, str]:
    """The run a delivery by hand carried and its text without the delivery's header:
    the run Supervisor's header names, else the child's result the text contains (the
    longest, then the latest); else no run, and the text as sent."""
    text = wake.summary or ""
    results = [
        r for r in snap.runs_by_thread.get(child_thread(snap, task) or "", []) if has_result(r)
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


def _reach(snap: Snapshot, task: TaskView, run: RunView | None, reading: Reading) -> Reach | None:
    """Whether `run`'s result reached the parent as the operator sees it, and how; None
    for no run or one without a text."""
    if run is None or not (run.summary or "").strip():
        return None
    wanted = normalized(run.summary)
    by_wake_only = reading.by_wake_only
    for h in reading.handings:
        if h.by_hand and h.text and h.run is not None and h.run.id == run.id:
            owned = owning(snap, task, run).owned
            return Reach(True, f"by {h.via}", via=h.via, by_hand=not owned)
    # T's own wakes first: another task's wake with the same words is only a fallback.
    for wake in sorted(reading.to_parent, key=lambda w: w.source_task != task.id):
        carried = normalized(wake.summary)
        if carried is None:
            continue
        own = wake.source_task == task.id
        via = f"wake {wake.id}" + ("" if own else f" (task {wake.source_task})")
        if wake.source_kind == "manual" and wanted in carried and (own or not by_wake_only):
            return Reach(True, f"by hand (wake {wake.id})", via=via)
        if wake.source_kind == "task" and carried == wanted and (own or not by_wake_only):
            if wake.delivered:
                return Reach(True, f"by {via}", via=via)
            if not by_wake_only:
                how = f"by {via}, queued for the parent, which has not taken it yet"
                return Reach(True, how, via=via)
    for h in reading.handings:
        if h.reached_as_operator_sees_it and not h.by_hand and normalized(h.text) == wanted:
            return Reach(True, f"by the {h.via}", via=h.via)
    why = next(
        (h.why_not for h in reading.handings if h.why_not and normalized(h.text) == wanted),
        "no wake or terminal report carried it",
    )
    if by_wake_only:
        why = "the orchestrator hands results by wake only, and no wake of it was delivered"
    return Reach(False, why)


# --- by the contract's words (§4) ---------------------------------------------------


def latest_result_by_contract(snap: Snapshot, task: TaskView) -> RunView | None:
    """T's latest result (§4): its owned finished run with the highest ordinal and a
    result; None without one."""
    return read(snap, task).latest_by_contract


def result_run_by_contract(snap: Snapshot, task: TaskView) -> RunView | None:
    """T's result run (§4), the run its current report's text came from: the run it
    names; else the owned finished run with the highest ordinal and that text; else none."""
    report = task.current_report
    if report is None:
        return None
    if report.result_run is not None:
        # Named but not described yet: a placeholder, whose ordinal is unknown.
        placeholder = RunView(id=report.result_run, thread=child_thread(snap, task) or "")
        return snap.runs.get(report.result_run, placeholder)
    return _owned_run_with_text(owned_runs(snap, task), report.summary)


def handed_by_contract(snap: Snapshot, task: TaskView) -> list[Handing]:
    """The texts handed to the parent for T (§4): task wakes of T to the parent with a
    text, by queue time, then T's terminal reports with a text, by time."""
    return [h for h in read(snap, task).handings if h.how in (WAKE, REPORT)]


def handed_text_by_contract(snap: Snapshot, task: TaskView, text: str | None) -> bool:
    """Whether `text` is one of the texts handed to the parent for T (§4)."""
    return any(same_text(h.text, text) for h in handed_by_contract(snap, task))


def reaching_wake_by_contract(snap: Snapshot, task: TaskView, text: str | None) -> WakeView | None:
    """The first wake that brought `text` to T's parent thread (§4), taken or not: a task
    wake (of any task: follow-ups count) carrying the text itself, or a manual wake
    containing it (a delivery by hand adds a header)."""
    wanted = normalized(text)
    if wanted is None:
        return None
    for wake in read(snap, task).to_parent:
        carried = normalized(wake.summary)
        if carried is None:
            continue
        if wake.source_kind == "task" and carried == wanted:
            return wake
        if wake.source_kind == "manual" and wanted in carried:
            return wake
    return None


def reached_by_contract(snap: Snapshot, task: TaskView, text: str | None) -> bool:
    """Whether `text` reached T's parent by the contract's words (§4)."""
    return reaching_wake_by_contract(snap, task, text) is not None


def carries_text_of(handing: Handing, run: RunView) -> bool:
    """Whether a handing's text is `run`'s summary (§4 compares texts so)."""
    return same_text(handing.text, run.summary)


# --- delivered (§4's last two notions) ------------------------------------------------


def task_wake_delivered(snap: Snapshot, task: TaskView) -> bool:
    """A task wake of T to the parent was delivered (§4), whatever its text or outcome."""
    return any(
        wake.source_kind == "task" and wake.source_task == task.id and wake.delivered
        for wake in read(snap, task).to_parent
    )


def deliveries_by_hand(snap: Snapshot, task: TaskView, *, any_text: bool = False) -> list[Handing]:
    """The deliveries by hand of T made (§4: manual wakes of T to the parent), by queue
    time; those that carried a text, or with `any_text` all of them (an orchestrator's
    record that the result went over by other means carries none)."""
    return [h for h in read(snap, task).handings if h.by_hand and (h.text or any_text)]


def delivered_to_parent(snap: Snapshot, task: TaskView) -> bool:
    """A task wake of T was delivered to the parent or a delivery by hand of T was made
    (§4), one without text included."""
    return task_wake_delivered(snap, task) or bool(deliveries_by_hand(snap, task, any_text=True))


# --- as the operator sees it (issue 30) -----------------------------------------------


def latest_result_as_operator_sees_it(snap: Snapshot, task: TaskView) -> RunView | None:
    """T's latest result as the page shows it: the contract's, unless a later run of the
    child (a higher ordinal) was delivered by hand for T."""
    return read(snap, task).latest_as_operator


def latest_reach_as_operator_sees_it(snap: Snapshot, task: TaskView) -> Reach | None:
    """Whether and how T's latest result (as the operator sees it) reached the parent."""
    return read(snap, task).latest_reach


def reached_as_operator_sees_it(snap: Snapshot, task: TaskView, run: RunView) -> bool:
    """Whether `run`'s result reached the parent as the operator sees it: by a delivery
    by hand of it, by a task wake that was delivered (or, unless the report says
    `delivery: "wake"`, only queued), or by a terminal report that hands texts."""
    reading = read(snap, task)
    if reading.latest_as_operator is not None and reading.latest_as_operator.id == run.id:
        return reading.latest_reach is not None and reading.latest_reach.reached
    reach = _reach(snap, task, run, reading)
    return reach is not None and reach.reached


def holds_text_as_operator_sees_it(snap: Snapshot, task: TaskView, text: str | None) -> bool:
    """Whether the parent holds `text` for T as the operator sees it: a handing of it
    reached the parent, or it is T's latest result and that reached it."""
    wanted = normalized(text) or None
    if wanted is None:
        return False
    reading = read(snap, task)
    held = {normalized(h.given) for h in reading.handings if h.reached_as_operator_sees_it}
    if reading.latest_reach is not None and reading.latest_reach.reached:
        held.add(normalized(reading.latest_as_operator.summary))
    return wanted in held


def holds_result_as_operator_sees_it(snap: Snapshot, task: TaskView) -> bool:
    """T's parent holds T's result: its latest result reached the parent as the operator
    sees it; without a latest result, as delivered (§4: a task wake of T delivered to the
    parent, or a delivery by hand of T, one without text included)."""
    reach = read(snap, task).latest_reach
    if reach is not None:
        return reach.reached
    return delivered_to_parent(snap, task)


def queued_not_taken(snap: Snapshot, task: TaskView, run: RunView) -> WakeView | None:
    """The task wake carrying `run`'s result that the parent has not taken, while the
    result has not reached the parent otherwise: reached by the contract's words (a queued
    wake counts), not as the operator sees it. Handing it over again by hand would give
    the parent the same result twice once the wake is taken."""
    if reached_as_operator_sees_it(snap, task, run):
        return None
    wake = reaching_wake_by_contract(snap, task, run.summary)
    if wake is None or wake.source_kind != "task" or wake.delivered:
        return None
    return wake
