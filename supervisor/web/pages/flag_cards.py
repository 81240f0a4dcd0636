"""A flag as the pages show it on a card: its kind in words, its evidence, what resolved
it, whether it is snoozed or silenced, the reset it may be snoozed until, and the
sub-tasks a cancel did not reach."""

from __future__ import annotations

from supervisor.core import clock
from supervisor.core.actions.outcomes import LATER_EVENTS
from supervisor.core.flags.kinds import kind_of
from supervisor.core.flags.snoozes import reset_snooze
from supervisor.core.models import Flag, Task


def flag_entry(
    flag: Flag, *, url: str | None = None, subject: str | None = None, silence=None
) -> dict:
    """A flag with its words for an operator; `silence`, the one holding it (if any)."""
    evidence = flag.evidence if isinstance(flag.evidence, dict) else {}
    reset = reset_snooze(flag, evidence)
    return {
        "flag": flag,
        "words": kind_of(flag.kind),
        "text": evidence.get("text") or "",
        "events": [e for e in evidence.get("events") or [] if e],
        "url": url,
        "subject": subject or flag.subject_id,
        "resolved_words": resolved_words(flag) if flag.state == Flag.RESOLVED else "",
        "snoozed": flag.snoozed_until is not None and flag.snoozed_until > clock.now(),
        "silence": silence if flag.state == Flag.OPEN else None,
        "reset": reset,
        # The snooze form's `until` (snooze_times reads it so: UTC, to the minute).
        "reset_until": f"{reset:%Y-%m-%dT%H:%M}" if reset else "",
        "subtasks": going_subtasks(flag, evidence),
    }


def going_subtasks(flag: Flag, evidence: dict) -> list[Task]:
    """The sub-tasks a cancel did not reach (cancel_not_propagated names them): linked
    from the flag, as the task's own cancel cannot stop them and each page's can."""
    ids = evidence.get("tasks") if flag.kind == "cancel_not_propagated" else None
    if flag.state != Flag.OPEN or not isinstance(ids, list) or not ids:
        return []
    found = Task.objects.filter(namespace_id=flag.namespace_id, task_id__in=ids[:20], known=True)
    return list(found.only("pk", "task_id", "title").order_by("task_id"))


def resolved_words(flag: Flag) -> str:
    """What resolved a flag: an operator by hand (who, and the reason), an action that
    answered it, or the orchestrator's later events (the rules' words, when recorded)."""
    if flag.resolved_by_id is not None:
        return f"resolved by hand by {flag.resolved_by.get_username()}: {flag.resolve_reason}"
    return flag.resolve_reason or LATER_EVENTS
