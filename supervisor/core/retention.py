"""Retention: rows past their time are deleted, a bounded batch per transaction.

What is never pruned, whatever its age (each is still needed, or nothing else has it):
- dead letters not yet replayed: an operator must fix or discard them;
- open flags, and resolved flags still `suppressed`: an operator resolved them while
  their condition held, and reconcile reads them to keep the flag from reopening;
- actions queued or sending, and succeeded deliveries: `action_one_delivery` is the
  only record that a run was delivered by hand, so a second delivery stays refused;
- notifications not sent (pending, sending, failing: never dropped);
- tasks, threads, runs and the rest of the mirror (and their reports): detection reads them.

Events past their retention lose the duplicate check their row gave: a resent one is
taken again, and applying it again changes nothing (entity rows keep the description
with the later `at`, then greater id: the same event ties; reports, tool rejections
and task requests, which keep their ids, still count it a duplicate). See
docs/operations.md.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet

from supervisor.core import changes
from supervisor.core.changes import ChangeKind
from supervisor.core.models import (
    Action,
    Change,
    DeadLetter,
    Flag,
    IngestedEvent,
    TaskReport,
    TaskRequest,
    ToolRejection,
)

log = logging.getLogger(__name__)

BATCH = 5000  # rows per DELETE: no long lock, no huge transaction


@dataclass(frozen=True)
class Kind:
    name: str  # the key in the counts
    setting: str  # the key in SUPERVISOR_RETENTION
    model: type
    column: str  # the age is measured on it
    keep: Q = Q()  # rows never pruned, whatever their age


@dataclass(frozen=True)
class Dependent:
    """Rows deleted with the rows of a kind (by cascade), counted under their own name."""

    name: str
    model: type
    link: str  # the foreign key to the kind's model


KINDS = [
    Kind("events", "events", IngestedEvent, "received_at"),
    # Replayed: their events went through ingest, and the letter's job is done.
    Kind("dead_letters", "events", DeadLetter, "replayed_at"),
    Kind(
        "flags",
        "flags",
        Flag,
        "resolved_at",
        keep=~Q(state=Flag.RESOLVED) | Q(suppressed=True),
    ),
    Kind(
        "actions",
        "actions",
        Action,
        "finished_at",
        keep=~Q(state__in=(Action.SUCCEEDED, Action.FAILED))
        | Q(kind="deliver", state=Action.SUCCEEDED),
    ),
    Kind("changes", "changes", Change, "at"),
]
# What the apps above core keep (notify's outbox and alerts), registered from their
# ready() through register().
DEPENDENTS: list[Dependent] = []


def register(kind: Kind | None = None, *, before: str = "changes", dependent=None) -> None:
    """Add an app's kind of rows (pruned before `before`), or rows deleted with a kind."""
    if kind is not None and kind.name not in {k.name for k in KINDS}:
        KINDS.insert([k.name for k in KINDS].index(before), kind)
    if dependent is not None and dependent.name not in {d.name for d in DEPENDENTS}:
        DEPENDENTS.append(dependent)


def retention_days() -> dict[str, int]:
    return settings.SUPERVISOR_RETENTION


def prunable(kind: Kind, now: datetime) -> QuerySet | None:
    """The rows of `kind` past their retention at `now`; None when kept forever (0 days)."""
    days = retention_days()[kind.setting]
    if not days:
        return None
    cutoff = now - timedelta(days=days)
    return kind.model.objects.filter(**{f"{kind.column}__lt": cutoff}).exclude(kind.keep)


def prune(now: datetime, *, dry_run: bool = False, batch: int = BATCH) -> dict[str, int]:
    """Delete what is past its retention at `now`; the rows deleted (or, in a dry run,
    that would be) per kind. `flag_alerts` are the alerts of the flags deleted.

    Safe to run twice at once: each batch locks the rows it takes and skips rows another
    run holds (PostgreSQL; SQLite has one writer anyway), so no row is counted twice and
    neither waits on the other."""
    counts = {kind.name: 0 for kind in KINDS} | {d.name: 0 for d in DEPENDENTS}
    for kind in KINDS:
        rows = prunable(kind, now)
        if rows is None:
            continue
        if dry_run:
            counts[kind.name] = rows.count()
            for dependent in DEPENDENTS:
                if dependent.model._meta.get_field(dependent.link).related_model is kind.model:
                    counts[dependent.name] = dependent.model.objects.filter(
                        **{f"{dependent.link}__in": rows}
                    ).count()
            continue
        listed = batch
        while listed == batch:  # a short batch was the last one
            listed, deleted = _delete_batch(rows, batch)
            counts[kind.name] += deleted.get(kind.model._meta.label, 0)
            for dependent in DEPENDENTS:
                counts[dependent.name] += deleted.get(dependent.model._meta.label, 0)
    if not dry_run:
        _record(counts, now)
    return counts


def _delete_batch(rows: QuerySet, batch: int) -> tuple[int, dict[str, int]]:
    """Delete up to `batch` of `rows` in one transaction: how many were listed, and the
    rows deleted per model."""
    with transaction.atomic():
        pks = list(
            rows.order_by().select_for_update(skip_locked=True).values_list("pk", flat=True)[:batch]
        )
        if not pks:
            return 0, {}
        # The condition again: a row that changed since it was listed is left alone.
        _, deleted = rows.filter(pk__in=pks).delete()
    return len(pks), deleted


def _record(counts: dict[str, int], now: datetime) -> None:
    """An operator sees pruning happen: a log line each run, a change (the audit page's
    admin entries) when something went."""
    days = retention_days()
    log.info(
        "retention: pruned %s (days kept: %s)",
        ", ".join(f"{name} {count}" for name, count in counts.items()),
        ", ".join(f"{name} {value or 'forever'}" for name, value in days.items()),
    )
    if any(counts.values()):
        # What the audit page shows: the kinds that lost rows, and how many.
        pruned = ", ".join(f"{name} {count}" for name, count in counts.items() if count)
        changes.record(
            ChangeKind.RETENTION_PRUNED,
            changes.Subject("retention", pruned),
            at=now,
            actor="supervisor",
            counts=counts,
            days=dict(days),
        )


def known_event_ids(source, events: list) -> set[str]:
    """Ids of `source`'s events whose rows were pruned but whose reports, tool
    rejections or task requests remain (they keep their event's id): a resend of one
    is a duplicate."""
    found: set[str] = set()
    for model, kind in (
        (TaskReport, "task.reported"),
        (ToolRejection, "tool.rejected"),
        (TaskRequest, "task.requested"),
    ):
        ids = [e.id for e in events if e.type == kind]
        for start in range(0, len(ids), 500):
            found.update(
                model.objects.filter(
                    source=source, event_id__in=ids[start : start + 500]
                ).values_list("event_id", flat=True)
            )
    return found
