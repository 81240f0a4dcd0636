"""The one writer of the change log: every change row (what live pages follow, the API's
change feed reads and the audit page lists) is written here, with a kind from `ChangeKind`.

A writer describes what its change is about once (a `Subject`: the subject's type and
id, its namespace, and what every change about it says) and records each change with
the details of that change, in its own transaction."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import NamedTuple

from django.db import models

from supervisor.core import clock
from supervisor.core.models import Change
from supervisor.core.store.batch_write import insert_rows


class ChangeKind(models.TextChoices):
    """Every kind of change. The values are public: the live relay, the API's change
    feed and the audit page read them, so they never change."""

    # Mirrored state (ingest).
    TASK_UPDATED = "task.updated"
    THREAD_UPDATED = "thread.updated"
    # Flags (evaluation, operators).
    FLAG_OPENED = "flag.opened"
    FLAG_UPDATED = "flag.updated"
    FLAG_RESOLVED = "flag.resolved"
    FLAG_ACKNOWLEDGED = "flag.acknowledged"
    FLAG_SNOOZED = "flag.snoozed"
    FLAG_UNACKNOWLEDGED = "flag.unacknowledged"
    FLAG_UNSNOOZED = "flag.unsnoozed"
    # Who looks after a task's problem (operators).
    TASK_ASSIGNED = "task.assigned"
    TASK_UNASSIGNED = "task.unassigned"
    # Silences (operators).
    SILENCE_CREATED = "silence.created"
    SILENCE_EDITED = "silence.edited"
    SILENCE_ENDED = "silence.ended"
    # Operator actions.
    ACTION_REQUESTED = "action.requested"
    ACTION_SENDING = "action.sending"
    ACTION_SUCCEEDED = "action.succeeded"
    ACTION_RETRYING = "action.retrying"
    ACTION_FAILED = "action.failed"
    # The alert outbox.
    NOTIFICATION_QUEUED = "notification.queued"
    NOTIFICATION_SENT = "notification.sent"
    NOTIFICATION_FAILING = "notification.failing"
    NOTIFICATION_FAILED = "notification.failed"
    NOTIFICATION_RETRY = "notification.retry"
    # Admin changes.
    USER_CREATED = "user.created"
    USER_ROLE = "user.role"
    SOURCE_CREATED = "source.created"
    SOURCE_REVOKED = "source.revoked"
    SOURCE_TOKEN_ROTATED = "source.token_rotated"
    SOURCE_CONNECTOR = "source.connector"
    SOURCE_RENAMED = "source.renamed"  # by a migration: the name is Supervisor's own
    CHANNEL_CREATED = "channel.created"
    CHANNEL_EDITED = "channel.edited"
    CHANNEL_ENABLED = "channel.enabled"
    CHANNEL_DISABLED = "channel.disabled"
    ROUTE_CREATED = "route.created"
    ROUTE_EDITED = "route.edited"
    DEAD_LETTER_REPLAYED = "dead_letter.replayed"
    DEAD_LETTER_REPLAY_FAILED = "dead_letter.replay_failed"
    RETENTION_PRUNED = "retention.pruned"


class Subject(NamedTuple):
    """What a change is about. `type` holds at most 10 characters (Change.subject_type)."""

    type: str
    id: str
    namespace_id: int | None = None
    # What every change about this subject says (the details of one change are added).
    facts: dict | None = None


def row(kind: ChangeKind, subject: Subject, /, *, at: datetime | None = None, **details) -> Change:
    """The change row, not saved (see `record` and `record_all`)."""
    return Change(
        at=at or clock.now(),
        namespace_id=subject.namespace_id,
        kind=ChangeKind(kind).value,
        subject_type=subject.type,
        subject_id=subject.id,
        payload={**(subject.facts or {}), **details},
    )


def record(
    kind: ChangeKind, subject: Subject, /, *, at: datetime | None = None, **details
) -> Change:
    """Append one change; `details` say what this change was (who, why, the error...)."""
    change = row(kind, subject, at=at, **details)
    change.save(force_insert=True)
    return change


def record_all(changes: Iterable[tuple[ChangeKind, Subject]], *, at: datetime | None = None):
    """Append many changes at once, in order (ingest's touched tasks and threads), from
    plain values: no model instance per row."""
    at = at or clock.now()
    insert_rows(
        Change,
        ["at", "namespace_id", "kind", "subject_type", "subject_id", "payload"],
        [
            (
                at,
                subject.namespace_id,
                ChangeKind(kind).value,
                subject.type,
                subject.id,
                json.dumps(subject.facts or {}),
            )
            for kind, subject in changes
        ],
    )
