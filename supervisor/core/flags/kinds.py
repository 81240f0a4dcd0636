"""The catalogue of flag kinds: for each kind, what it sits on, how bad it is, its words
for an operator, the action it suggests and what answers it. Every list of kinds (the
pages' filters, the metrics, alerts' severities, the actions' outcomes) is read from here,
so a new rule is described in one place; a test fails when a rule's kind is missing.

Severity: critical when a parent acts on a wrong or missing result (or a child's work is
being thrown away), warning when something is slow or odd and leaves no wrong answer
with the parent yet.
"""

from __future__ import annotations

from dataclasses import dataclass

CRITICAL, WARNING = "critical", "warning"
RANK = {WARNING: 1, CRITICAL: 2}

# The suggested action: an operator action (deliver, continue, cancel) or a look.
DELIVER = "deliver"
CONTINUE = "continue"
CANCEL = "cancel"
LOOK = "look"
EXPLAIN = "explain"
ACTIONS = (DELIVER, CONTINUE, CANCEL, LOOK, EXPLAIN)

# What answers a kind (core/actions/outcomes.py tells it an operator's way).
BY_DELIVERY = "delivery"  # the latest result reaching the parent, by hand or not
BY_REPORT = "report"  # the orchestrator reporting the task again (or the later result delivered)
BY_REASON = "reason"  # an operator resolving it with a reason: it records what happened
BY_EVENTS = "events"  # the orchestrator's (or the source's) later events
ANSWERS = (BY_DELIVERY, BY_REPORT, BY_REASON, BY_EVENTS)

TASK, THREAD, SOURCE = "task", "thread", "source"
SUBJECTS = frozenset({TASK, THREAD, SOURCE})


@dataclass(frozen=True)
class FlagKind:
    kind: str
    subjects: frozenset[str]  # task | thread | source: what its flags sit on
    severity: str  # critical | warning
    title: str  # a short name for the kind
    meaning: str  # what the supervisor saw
    advice: str  # the suggested action, in words
    action: str  # deliver | continue | cancel | look | explain
    answered_by: str  # delivery | report | reason | events
    # Among kinds of equal severity and action, which heads a task's problem first: the
    # one that says most about what the parent holds (0 first); None comes after.
    tells: int | None = None


def _kind(kind, subjects, severity, title, meaning, advice, action, answered_by, tells=None):
    return FlagKind(
        kind, frozenset(subjects), severity, title, meaning, advice, action, answered_by, tells
    )


# In the rules' order (core/rules RULES), then source_silent: the metrics list them so.
CATALOGUE = {
    entry.kind: entry
    for entry in (
        _kind(
            "premature_completion",
            {TASK},
            # Called done while owned work still ran: the parent has a partial answer.
            CRITICAL,
            "Completed too early",
            "The orchestrator called the task done while the child still had owned work going.",
            "Deliver the latest result to the parent once the child has finished.",
            DELIVER,
            BY_DELIVERY,
        ),
        _kind(
            "stale_result",
            {TASK},
            # The parent went on with a text that is not the child's latest result.
            CRITICAL,
            "Stale result handed on",
            "The parent was given a text that is not the child's latest result.",
            "Deliver the latest result to the parent.",
            DELIVER,
            BY_DELIVERY,
            tells=0,
        ),
        _kind(
            "undelivered_result",
            {TASK},
            # A newer result exists and the parent never got it.
            CRITICAL,
            "Later result not delivered",
            "A later owned run finished with a newer result that never reached the parent.",
            "Deliver the latest result to the parent.",
            DELIVER,
            BY_DELIVERY,
            tells=2,
        ),
        _kind(
            "never_delivered",
            {TASK},
            # The result exists and nothing will bring it: the parent waits for good.
            CRITICAL,
            "Result never delivered",
            "The task finished, no text of it reached the parent, and nothing will wake the "
            "parent to take it.",
            "Deliver the result to the parent.",
            DELIVER,
            BY_DELIVERY,
            tells=1,
        ),
        _kind(
            "failed_while_running",
            {TASK},
            # Reported failed while the child works on: the parent may redo or drop the work.
            CRITICAL,
            "Reported failed, child went on",
            "The task was reported failed or interrupted, yet its child kept working.",
            "Continue the child (or let it finish), then deliver its result.",
            CONTINUE,
            BY_REPORT,
            tells=3,
        ),
        _kind(
            "transient_failure",
            {TASK},
            WARNING,
            "Failed on a passing fault",
            "The task was reported failed on what reads as a provider or network hiccup.",
            "Continue the child; do not delegate the task again.",
            CONTINUE,
            BY_REPORT,
        ),
        _kind(
            "duplicate_delegation",
            {TASK},
            WARNING,
            "Delegated twice",
            "The same task was delegated again while the first child was still working.",
            "Cancel the duplicate (this task); the earlier one carries the work.",
            CANCEL,
            BY_REASON,
        ),
        _kind(
            "orphan_wake",
            {TASK, THREAD},
            WARNING,
            "Wake for an unknown task",
            "A wake named a task that was never delegated here.",
            "Explain: check for a missing follower or a mislabelled task id, then resolve "
            "with a reason.",
            EXPLAIN,
            BY_EVENTS,
        ),
        _kind(
            "late_wake",
            {TASK, THREAD},
            WARNING,
            "Wake not delivered",
            "A result was queued for the parent but the parent has not taken it.",
            "Explain: check that the parent thread is running; the result waits for it.",
            EXPLAIN,
            BY_EVENTS,
        ),
        _kind(
            "stuck",
            {TASK},
            WARNING,
            "Stuck",
            "Nothing owned by the task has happened for a long time, or a wake never started.",
            "Look at the child thread: is it still working, or waiting on something?",
            LOOK,
            BY_EVENTS,
        ),
        _kind(
            "left_by_restart",
            {TASK},
            WARNING,
            "Left by a restart",
            "The orchestrator restarted (or stopped) and cut the child's run; the task still "
            "says it is under way and nothing will resume it, or the orchestrator cancelled "
            "it itself and the parent will never hear of it.",
            "Continue the child so that it finishes the work, or tell the parent yourself "
            "that the task was cut (then resolve this with that reason); cancel the task if "
            "the work is no longer wanted.",
            CONTINUE,
            BY_EVENTS,
        ),
        _kind(
            "dispatch_lag",
            {TASK},
            WARNING,
            "Dispatched late",
            "The delegation left the parent well after it was emitted.",
            "Explain: batched wait calls run one at a time; acknowledge if that was expected.",
            EXPLAIN,
            BY_EVENTS,
        ),
        _kind(
            "delegation_rejected",
            {THREAD},
            WARNING,
            "Delegation refused",
            "The orchestrator refused a delegation on this thread, so that work never started.",
            "Explain: tell the parent's operator; the refused work must be asked for again.",
            EXPLAIN,
            BY_EVENTS,
        ),
        _kind(
            "delegation_never_started",
            {THREAD},
            WARNING,
            "Delegation never started",
            "The parent asked to delegate a task, and no child was made for it: no "
            "delegation with its request id and no refusal followed within the spawn "
            "timeout. The delegate call hangs, and the parent may wait on it for hours.",
            "Look at the parent's orchestrator: stop the hung call and ask for the task "
            "again, or tell the parent that it was never delegated (then resolve this "
            "with that reason).",
            LOOK,
            BY_EVENTS,
        ),
        _kind(
            "completed_on_failure",
            {TASK},
            # The parent holds a success that is not one, and acts on it.
            CRITICAL,
            "Success hiding a failure",
            "The task was reported completed, but the run its result came from failed, was "
            "interrupted or was cancelled, or the text handed as the result is its error.",
            "Continue the child so that it does the work, then deliver its result to the "
            "parent (or tell the parent yourself that the task failed).",
            CONTINUE,
            BY_DELIVERY,
        ),
        _kind(
            "account_limit",
            {TASK},
            WARNING,
            "Account limit reached",
            "The task failed on a usage, quota or spend limit of the account; continuing at "
            "once fails again.",
            "Snooze this flag until the limit resets, then continue the child; do not "
            "delegate the task again.",
            CONTINUE,
            BY_REPORT,
        ),
        _kind(
            "misrouted_wake",
            {TASK},
            # The result went to another thread: the parent goes on without it.
            CRITICAL,
            "Wake sent to the wrong thread",
            "The task's result was sent by a wake to a thread that is not its parent, and "
            "the parent has not received it.",
            "Deliver the latest result to the parent; tell the thread that got it by mistake "
            "to ignore it.",
            DELIVER,
            BY_DELIVERY,
        ),
        _kind(
            "cancel_not_propagated",
            {TASK},
            # The parent was told "cancelled", which is so: only the spending goes on.
            WARNING,
            "Cancel did not stop the work",
            "The task was reported cancelled, yet a run, background item or sub-task it owns "
            "is still going after the grace: the cancel did not reach that work.",
            "Cancel again so the child's run stops; stop a background item or sub-task that "
            "goes on in the orchestrator (or cancel that sub-task).",
            CANCEL,
            BY_EVENTS,
        ),
        _kind(
            "silent_background_item",
            {TASK},
            # Nothing wrong is with the parent yet; the task may hang for ever unnoticed.
            WARNING,
            "Background item silent",
            "A background item the task waits on still shows as running, yet nothing has "
            "happened on its thread for a long time: it may have ended without saying so.",
            "Look at the child thread: if the command or monitor has exited, continue the "
            "child so that it goes on without it, or cancel the task.",
            LOOK,
            BY_EVENTS,
        ),
        _kind(
            "source_silent",
            {SOURCE},
            WARNING,
            "Source silent",
            "A source with unfinished tasks has sent nothing for a long time.",
            "Look at the source's orchestrator or follower: until it speaks, its tasks' data "
            "is out of date.",
            LOOK,
            BY_EVENTS,
        ),
    )
}

KINDS = tuple(CATALOGUE)


def kind_of(kind: str) -> FlagKind:
    """The catalogue's entry; a kind it does not know (a flag stored by an older version)
    reads as its code in words, a warning to explain."""
    return CATALOGUE.get(kind) or FlagKind(
        kind,
        frozenset(),
        WARNING,
        kind.replace("_", " ").capitalize(),
        "",
        "Explain, then resolve.",
        EXPLAIN,
        BY_EVENTS,
    )


def severity_of(kind: str) -> str:
    return kind_of(kind).severity


def at_least(kind: str, minimum: str) -> bool:
    return RANK[severity_of(kind)] >= RANK.get(minimum, 1)


def answered_by(answer: str) -> frozenset[str]:
    """The kinds `answer` (BY_DELIVERY, ...) answers."""
    return frozenset(k for k, entry in CATALOGUE.items() if entry.answered_by == answer)


def titles(kinds) -> str:
    """Flag kinds as their titles, joined: "Stale result handed on, Completed too early"."""
    return ", ".join(kind_of(kind).title for kind in kinds)
