"""One flag action (acknowledge, snooze, resolve) on the open flags of many tasks.

Each flag goes through its own do_* function (core.flags), so the rules and the audit
are those of a single flag action: acknowledging twice keeps the first acknowledgement,
the same snooze again changes nothing, a resolved flag is not resolved again. A flag
that cannot take the action (resolved meanwhile) is reported and stops nothing else.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from supervisor.core.flags.writers import (
    FlagActionError,
    do_acknowledge_flag,
    do_resolve_flag_by_hand,
    do_snooze_flag,
)
from supervisor.core.models import Flag, Task

FLAG_VERBS = ("acknowledge", "snooze", "resolve")
# Flag actions on many tasks act on the tasks' open flags, not through a connector: their
# preview counts the flags, it has no text to show.
FLAG_ACTION_LABELS = {
    "acknowledge": "Acknowledge their open flags",
    "snooze": "Snooze their open flags",
    "resolve": "Resolve their open flags (with a reason)",
}
DONE_WORDS = {"acknowledge": "acknowledged", "snooze": "snoozed", "resolve": "resolved"}


def open_flags_of(tasks, kind: str | None = None) -> list[Flag]:
    """The open flags of `tasks` (of one flag kind when given), by task then kind."""
    flags = Flag.objects.filter(task__in=[t.pk for t in tasks], state=Flag.OPEN)
    if kind:
        flags = flags.filter(kind=kind)
    return list(flags.order_by("task_id", "kind", "pk"))


def kind_counts(flags) -> list[tuple[str, int]]:
    """[(flag kind, how many)], the most frequent first."""
    return sorted(Counter(f.kind for f in flags).items(), key=lambda kc: (-kc[1], kc[0]))


@dataclass
class TaskOutcome:
    """What one bulk flag action did to one task's flags (kinds, per outcome)."""

    task: Task
    done: list[str] = field(default_factory=list)  # changed by this request
    already: list[str] = field(default_factory=list)  # already so: nothing to change
    refused: list[tuple[str, str]] = field(default_factory=list)  # (kind, why)


def do_bulk_flag_action(
    verb: str,
    flag_pks,
    now: datetime,
    *,
    by=None,
    actor: str = "",
    until: datetime | None = None,
    reason: str = "",
) -> list[TaskOutcome]:
    """`verb` on each of the flags `flag_pks` (task flags only), one by one; per task,
    what was done, what already was, and what was refused and why."""
    if verb not in FLAG_VERBS:
        raise FlagActionError(f"unknown flag action {verb!r}")
    if verb == "resolve" and not (reason or "").strip():
        raise FlagActionError("a reason is needed to resolve flags by hand")
    if verb == "snooze" and (until is None or until <= now):
        raise FlagActionError("'until' must be in the future")
    flags = Flag.objects.filter(pk__in=list(flag_pks), task__isnull=False).select_related("task")
    outcomes: dict[int, TaskOutcome] = {}
    for flag in flags.order_by("task_id", "kind", "pk"):
        outcome = outcomes.setdefault(flag.task_id, TaskOutcome(flag.task))
        try:
            if verb == "acknowledge":
                after = do_acknowledge_flag(flag, now, by=by, actor=actor)
                changed = after.acknowledged_at == now
            elif verb == "snooze":
                changed = flag.snoozed_until != until
                do_snooze_flag(flag, until, now, actor=actor)
            else:
                was_open = flag.state == Flag.OPEN  # the call refreshes `flag`
                after = do_resolve_flag_by_hand(flag, now, reason=reason, by=by, actor=actor)
                changed = was_open and after.resolved_at == now
        except FlagActionError as exc:
            outcome.refused.append((flag.kind, str(exc)))
        else:
            (outcome.done if changed else outcome.already).append(flag.kind)
    return list(outcomes.values())


def opened_since(after: datetime, task_pks, kind: str | None = None) -> dict[int, list[str]]:
    """Open flags of these tasks opened after `after` (a preview): {task pk: kinds}."""
    found = defaultdict(list)
    rows = Flag.objects.filter(task__in=list(task_pks), state=Flag.OPEN, opened_at__gt=after)
    if kind:
        rows = rows.filter(kind=kind)
    for task_pk, flag_kind in rows.values_list("task_id", "kind"):
        found[task_pk].append(flag_kind)
    return found
