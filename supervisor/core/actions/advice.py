"""The advice on a task: which operator actions (deliver, continue, cancel) its open flags
call for, fitted to the task's state and to the actions already sent, as typed
suggestions; and what the newest continue led to. The task page and the API's task
detail show the same suggestions.

Whether a result "reached the parent" is read in the operator's meaning, the one "The
latest result" panel beside the advice reads (core.facts.reading): under
`delivery: "wake"` a queued wake that the parent has not taken does not count.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from supervisor.core.actions import outcomes as action_outcomes
from supervisor.core.actions.previews import nothing_to_cancel
from supervisor.core.actions.sending import cannot_act
from supervisor.core.facts import continued, reading
from supervisor.core.facts.snapshot import RunView, Snapshot, TaskView, WakeView
from supervisor.core.flags.kinds import CANCEL, CONTINUE, DELIVER, kind_of
from supervisor.core.flags.snoozes import reset_snooze
from supervisor.core.models import Action, Flag, Task
from supervisor.core.rules import never_delivered

ACTION_LABELS = {
    DELIVER: "Deliver the latest result",
    CONTINUE: "Continue the child",
    CANCEL: "Cancel the task",
}
ORDER = (DELIVER, CONTINUE, CANCEL)
UNDER_WAY, SENT = "under way", "sent"  # a suggestion's status once its action is asked


@dataclass(frozen=True)
class Suggestion:
    """An action suggested for a task, the open flags behind it, and whether it can be
    sent now: `unfit` says why not (no button then); `status` and `note` say where an
    action of the kind already asked stands."""

    kind: str  # deliver | continue | cancel
    label: str
    flags: tuple[str, ...]
    unfit: str | None = None  # why it cannot be sent now; None: it can
    status: str | None = None  # UNDER_WAY | SENT, once an action of the kind was asked
    note: str = ""  # with a status: the action, and what the page waits for
    why: str = ""  # why it is suggested when no flag calls for it
    run: str | None = None  # deliver: the run whose result it hands over (else the latest)

    @property
    def query(self) -> str:
        """The action page's query string (`run=…`), or ""."""
        return urlencode({"run": self.run}) if self.run else ""

    def as_json(self) -> dict:
        return {
            "kind": self.kind,
            "label": self.label,
            "flags": list(self.flags),
            "why_not": self.unfit,
            "status": self.status,
            "note": self.note or None,
            "why": self.why or None,
            "run": self.run,
        }


@dataclass(frozen=True)
class ContinuedOutcome:
    """What the newest continue the orchestrator took led to (issue 30): the run it
    started, what that run did, and what is left to do (core.facts.continued)."""

    action: Action
    run: RunView | None
    did: str
    left: str  # wait | deliver | act | nothing
    left_words: str
    deliver_run: str | None


@dataclass(frozen=True)
class Advice:
    suggestions: tuple[Suggestion, ...]
    continued: ContinuedOutcome | None


def advise(
    task: Task, snap: Snapshot, view: TaskView, open_flags: list[Flag], actions: list[Action]
) -> Advice:
    """The task's suggestions and its newest continue's outcome. `actions`: the task's
    actions, oldest first."""
    cont = continued_outcome(snap, view, actions)
    called = suggested_actions(open_flags, unfit_actions(task, snap, view, open_flags))
    return Advice(tuple(fit_to_state(called, snap, view, open_flags, actions, cont)), cont)


def suggested_actions(
    open_flags: list[Flag], unfit: dict[str, str] | None = None
) -> list[Suggestion]:
    """The actions the open flags call for (core.flags.kinds), each with the flags behind
    it; an action the task's state rules out carries why (`unfit`) and gets no button."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for flag in open_flags:
        action = kind_of(flag.kind).action
        if action in ACTION_LABELS:
            by_kind[action].append(flag.kind)
    return [
        Suggestion(
            kind, ACTION_LABELS[kind], tuple(sorted(set(by_kind[kind]))), (unfit or {}).get(kind)
        )
        for kind in ORDER
        if kind in by_kind
    ]


def unfit_actions(task: Task, snap: Snapshot, view: TaskView, open_flags) -> dict[str, str]:
    """Why an action the open flags call for cannot be sent now: the task's state, or no
    connector that can."""
    called = {kind_of(flag.kind).action for flag in open_flags}
    unfit = {}
    for kind in called & set(ACTION_LABELS):
        why = nothing_to_cancel(snap, view) if kind == CANCEL else None
        if why := why or cannot_act(task, kind)[0]:
            unfit[kind] = why
    return unfit


def continued_outcome(snap: Snapshot, view: TaskView, actions: list) -> ContinuedOutcome | None:
    """What the newest continue that the orchestrator took led to (issue 30): the run it
    started, what that run did, and what is left to do (wait, deliver, act, nothing)."""
    last = next(
        (a for a in reversed(actions) if a.kind == CONTINUE and a.state == Action.SUCCEEDED),
        None,
    )
    if last is None:
        return None
    found = continued.what_continued(snap, view, last.wake)
    return ContinuedOutcome(
        last, found.run, found.did, found.left, found.left_words, found.deliver_run
    )


# --- what the parent holds of a later run ------------------------------------------


def reached_parent(snap: Snapshot, view: TaskView, run: RunView) -> bool:
    """Whether `run`'s result has reached the parent as the operator sees it, the meaning
    "The latest result" panel reads (core.facts.reading): under `delivery: "wake"` a
    queued wake does not bring it, only a delivered one or a delivery by hand."""
    return reading.reached_as_operator_sees_it(snap, view, run)


def queued_for_parent(snap: Snapshot, view: TaskView, run: RunView) -> WakeView | None:
    """The task wake carrying `run`'s result that the parent has not taken yet
    (core.facts.reading: reached by the contract's words, not as the operator sees it)."""
    return reading.queued_not_taken(snap, view, run)


# --- fitted to the task's state -----------------------------------------------------


def fit_to_state(
    suggested: list[Suggestion],
    snap: Snapshot,
    view: TaskView,
    open_flags: list[Flag],
    actions: list,
    cont: ContinuedOutcome | None = None,
) -> list[Suggestion]:
    """The suggestions as the task's state and its actions leave them (issue 19):

    - the child finished a later run after a failed report, and the parent does not
      hold it: delivering that result comes first, and Continue is not offered; while a
      wake carrying it waits for the parent, neither is (a delivery would hand it twice);
    - an action of the kind queued or sending: "under way", no button;
    - an action of the kind that succeeded after its flags opened, while they are still
      open: "sent", what the page waits for, and which flags stay open and why."""
    by_kind = {s.kind: s for s in suggested}

    def rule_out(kind: str, why: str) -> None:
        found = by_kind.get(kind)
        if found is not None and not found.unfit:
            by_kind[kind] = replace(found, unfit=why)

    open_kinds = {f.kind for f in open_flags}
    failure = sorted(open_kinds & action_outcomes.FAILURE_KINDS)
    finished_later = action_outcomes.later_results(snap, view)
    # A wake the rules say nothing will bring (never_delivered) waits for nobody.
    stranded = never_delivered.KIND in open_kinds
    queued = {
        r.id: wake
        for r in finished_later
        if not stranded and (wake := queued_for_parent(snap, view, r)) is not None
    }
    later = [r for r in finished_later if r.id not in queued and not reached_parent(snap, view, r)]
    if failure and finished_later and not later:
        newest = finished_later[0]
        wake = queued.get(newest.id)
        rule_out(
            CONTINUE,
            f"the child already finished run {newest.ordinal} after the failure and its "
            + (
                f"result is queued for the parent (wake {wake.id}), which has not taken it "
                "yet: wait for the parent to take it"
                if wake is not None
                else "result has reached the parent: resolve the flags with a reason"
            ),
        )
    elif failure and later:
        run = later[0]
        called = by_kind.get(DELIVER)
        by_kind[DELIVER] = Suggestion(
            DELIVER,
            f"Deliver the child’s later result (run {run.ordinal})",
            tuple(sorted(set(failure) | set(called.flags if called else ()))),
            called.unfit if called else None,
            run=run.id,
        )
        rule_out(
            CONTINUE,
            f"the child already finished run {run.ordinal} after the failure: deliver "
            "its result instead",
        )
    elif (
        failure
        and CONTINUE in by_kind
        and not by_kind[CONTINUE].unfit
        and (going := action_outcomes.runs_under_way(snap, view))
    ):
        rule_out(
            CONTINUE,
            f"the child’s {continued.run_name(going[-1])} is under way: wait for it to finish",
        )
    resets = [r for f in open_flags if (r := reset_snooze(f, f.evidence or {})) is not None]
    if resets:
        # An account limit not reset yet: a continue now fails again on it.
        rule_out(
            CONTINUE,
            f"the account's limit resets at {max(resets):%Y-%m-%d %H:%M} UTC, and a continue "
            "before then fails again: snooze the flag until the reset",
        )
    if cont is not None and cont.deliver_run and DELIVER not in by_kind:
        # No flag calls for it (the task may still be reported running), but the
        # continued run's result is the task's latest and the parent does not have it.
        by_kind[DELIVER] = Suggestion(
            DELIVER,
            f"Deliver the continued run’s result ({continued.run_name(cont.run)})",
            (),
            cannot_act(cont.action.task, DELIVER)[0],
            why="what the continue started has finished: the parent does not have it yet",
            run=cont.deliver_run,
        )
    latest = {}
    for action in actions:  # oldest first: the newest of each kind wins
        latest[action.kind] = action
    for kind, s in list(by_kind.items()):
        action = latest.get(kind)
        if action is None or s.unfit:
            continue
        opened = max((f.opened_at for f in open_flags if f.kind in s.flags), default=None)
        if action.state in (Action.QUEUED, Action.SENDING):
            note = f"action {action.pk}, {action.state}: its outcome shows here"
            by_kind[kind] = replace(s, status=UNDER_WAY, note=note)
        elif action.state == Action.SUCCEEDED and (
            opened is None or action.finished_at is None or action.finished_at >= opened
        ):
            note = f"action {action.pk} succeeded; " + waiting_for(snap, view, action, open_kinds)
            by_kind[kind] = replace(s, status=SENT, note=note)
    return sorted(by_kind.values(), key=lambda s: (bool(s.unfit), ORDER.index(s.kind)))


def waiting_for(snap: Snapshot, view: TaskView, action: Action, open_kinds: set[str]) -> str:
    """After a succeeded action whose flags are still open: what the page waits for, and
    why each of them stays open."""
    if action.kind == CONTINUE:
        started = [
            r
            for r in action_outcomes.runs_under_way(snap, view)
            if r.requested_at is None or r.requested_at >= action.created_at
        ]
        waiting = (
            f"the child’s {continued.run_name(started[-1])} is under way: waiting for it to finish"
            if started
            else "waiting for the child’s run to be reported"
        )
    elif action.kind == DELIVER:
        waiting = "waiting for the recorded delivery to be judged"
    else:
        waiting = "waiting for the orchestrator to report the task cancelled"
    _, stays = action_outcomes.outcomes(snap, view, action.kind, open_kinds, run=action.run_id)
    return waiting + "".join(f"; {kind} stays open: {why}" for kind, why in stays)
