"""What each flag kind means to an operator, and what to do about it, in plain words."""

from __future__ import annotations

from dataclasses import dataclass

DELIVER = "deliver"
CONTINUE = "continue"
CANCEL = "cancel"
LOOK = "look"
EXPLAIN = "explain"


@dataclass(frozen=True)
class FlagWords:
    title: str  # a short name for the kind
    meaning: str  # what the supervisor saw
    advice: str  # the suggested action
    action: str  # deliver | continue | cancel | look | explain


WORDS = {
    "premature_completion": FlagWords(
        "Completed too early",
        "The orchestrator called the task done while the child still had owned work going.",
        "Deliver the latest result to the parent once the child has finished.",
        DELIVER,
    ),
    "stale_result": FlagWords(
        "Stale result handed on",
        "The parent was given a text that is not the child's latest result.",
        "Deliver the latest result to the parent.",
        DELIVER,
    ),
    "undelivered_result": FlagWords(
        "Later result not delivered",
        "A later owned run finished with a newer result that never reached the parent.",
        "Deliver the latest result to the parent.",
        DELIVER,
    ),
    "never_delivered": FlagWords(
        "Result never delivered",
        "The task finished, no text of it reached the parent, and nothing will wake the "
        "parent to take it.",
        "Deliver the result to the parent.",
        DELIVER,
    ),
    "transient_failure": FlagWords(
        "Failed on a passing fault",
        "The task was reported failed on what reads as a provider or network hiccup.",
        "Continue the child; do not delegate the task again.",
        CONTINUE,
    ),
    "failed_while_running": FlagWords(
        "Reported failed, child went on",
        "The task was reported failed or interrupted, yet its child kept working.",
        "Continue the child (or let it finish), then deliver its result.",
        CONTINUE,
    ),
    "duplicate_delegation": FlagWords(
        "Delegated twice",
        "The same task was delegated again while the first child was still working.",
        "Cancel the duplicate (this task); the earlier one carries the work.",
        CANCEL,
    ),
    "stuck": FlagWords(
        "Stuck",
        "Nothing owned by the task has happened for a long time, or a wake never started.",
        "Look at the child thread: is it still working, or waiting on something?",
        LOOK,
    ),
    "left_by_restart": FlagWords(
        "Left by a restart",
        "The orchestrator restarted and cut the child's run; the task still says it is "
        "under way, and nothing will resume it.",
        "Continue the child, or cancel the task if the work is no longer wanted.",
        CONTINUE,
    ),
    "orphan_wake": FlagWords(
        "Wake for an unknown task",
        "A wake named a task that was never delegated here.",
        "Explain: check for a missing follower or a mislabelled task id, then resolve "
        "with a reason.",
        EXPLAIN,
    ),
    "late_wake": FlagWords(
        "Wake not delivered",
        "A result was queued for the parent but the parent has not taken it.",
        "Explain: check that the parent thread is running; the result waits for it.",
        EXPLAIN,
    ),
    "dispatch_lag": FlagWords(
        "Dispatched late",
        "The delegation left the parent well after it was emitted.",
        "Explain: batched wait calls run one at a time; acknowledge if that was expected.",
        EXPLAIN,
    ),
    "delegation_rejected": FlagWords(
        "Delegation refused",
        "The orchestrator refused a delegation on this thread, so that work never started.",
        "Explain: tell the parent's operator; the refused work must be asked for again.",
        EXPLAIN,
    ),
    "source_silent": FlagWords(
        "Source silent",
        "A source with unfinished tasks has sent nothing for a long time.",
        "Look at the source's orchestrator or follower: until it speaks, its tasks' data "
        "is out of date.",
        LOOK,
    ),
}


def words_for(kind: str) -> FlagWords:
    return WORDS.get(
        kind,
        FlagWords(kind.replace("_", " ").capitalize(), "", "Explain, then resolve.", EXPLAIN),
    )


def titles(kinds) -> str:
    """Flag kinds as their titles, joined: "Stale result handed on, Completed too early"."""
    return ", ".join(words_for(kind).title for kind in kinds)
