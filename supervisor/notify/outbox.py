"""The notification outbox: each message is a row with a stable key, written once (the
unique key drops repeats), claimed by a worker with a compare-and-swap and a lease, sent
once per attempt, retried with backoff while it fails, at most `max_attempts` times; the
sweep re-enqueues what is left pending, failing or past its lease (the loop in
core/store/leases.py, which operator actions share). A message that can never be sent (a
permanent error), or whose attempts are spent, is failed with its reason and kept, never
dropped: an admin can send it again."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction

from supervisor.core import changes, dispatch
from supervisor.core.changes import ChangeKind
from supervisor.core.store import leases

from .content import Message
from .models import Channel, Notification

log = logging.getLogger(__name__)


def config() -> dict:
    return settings.SUPERVISOR_NOTIFY


def _subject(note: Notification) -> changes.Subject:
    facts = {"notification": note.pk, "key": note.key, "state": note.state}
    return changes.Subject("outbox", str(note.pk), None, facts)


def do_enqueue_notification(
    key: str, channel: Channel, kind: str, flag_pks: list[int], message: Message, now: datetime
) -> Notification | None:
    """Write the message to the outbox and enqueue it on commit; None when a message
    with this key exists already (it is the same message: nothing to add)."""
    if Notification.objects.filter(key=key).exists():
        return None
    note = Notification(
        key=key,
        channel=channel,
        kind=kind,
        flags=sorted(flag_pks),
        subject=message.subject,
        # The key travels in the text, so any receiver can drop a repeat.
        body=f"{message.body}\n\nref: {key}",
        created_at=now,
        updated_at=now,
        due_at=now + timedelta(seconds=config()["queue_grace"]),
    )
    try:
        with transaction.atomic():
            note.save()
            changes.record(ChangeKind.NOTIFICATION_QUEUED, _subject(note), at=now, message=kind)
            transaction.on_commit(lambda: _enqueue(note.pk))
    except IntegrityError:
        return None
    return note


def _enqueue(pk: int, countdown: float | None = None) -> None:
    dispatch.enqueue(dispatch.SEND_NOTIFICATION, pk, countdown=countdown)


# The outbox's messages, claimed under a lease (a sending one whose lease ran out: its
# worker died), at most `max_attempts` times.
OUTBOX = leases.WorkQueue(
    Notification,
    (Notification.PENDING, Notification.FAILING),
    Notification.SENDING,
    lambda pk, countdown=None: _enqueue(pk, countdown),
)


def do_claim_notification(pk: int, now: datetime) -> Notification | None:
    """pending/failing -> sending (or a sending one whose lease ran out: its worker
    died), with a new lease; None when another worker holds it, it was sent or failed,
    or its attempts are spent (then it is failed)."""
    cfg = config()
    with transaction.atomic():
        claimed = leases.claim(
            OUTBOX, pk, now, lease=cfg["lease"], max_attempts=cfg["max_attempts"]
        )
        if not claimed:
            do_give_up_notification(pk, now)
            return None
        return Notification.objects.select_related("channel").get(pk=pk)


def _attempts(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


@transaction.atomic
def do_give_up_notification(pk: int, now: datetime) -> bool:
    """Fail a message that is due again with every attempt spent: its last attempt never
    recorded an outcome (its worker died), so it may have been sent."""
    max_attempts = config()["max_attempts"]
    error = (
        f"gave up after {_attempts(max_attempts)}; the last one recorded no outcome, so it "
        "may have been sent"
    )
    failed = leases.give_up(
        OUTBOX, pk, now, max_attempts=max_attempts, state=Notification.FAILED, last_error=error
    )
    if failed:
        note = Notification.objects.get(pk=pk)
        changes.record(ChangeKind.NOTIFICATION_FAILED, _subject(note), at=now, error=error)
    return bool(failed)


def do_record_sent(note: Notification, now: datetime) -> str:
    with transaction.atomic():
        done = leases.settle(OUTBOX, note.pk, now, state=Notification.SENT, sent_at=now)
        if not done:  # another worker finished it first (our lease had run out)
            return leases.state_of(OUTBOX, note.pk)
        note.state = Notification.SENT
        changes.record(ChangeKind.NOTIFICATION_SENT, _subject(note), at=now, attempt=note.attempts)
    return Notification.SENT


def backoff(attempts: int) -> float:
    """Exponential from `backoff`, capped."""
    cfg = config()
    return leases.backoff(cfg["backoff"], max(attempts, 1), cfg["max_backoff"])


def do_record_failure(note: Notification, error: str, now: datetime, *, retryable: bool) -> str:
    """failing, retried later; failed when no retry can help (a permanent error) or
    this was the last attempt. The error is the reason the outbox page shows."""
    max_attempts = config()["max_attempts"]
    if not retryable:
        return _record_failed(note, error, now)
    if note.attempts >= max_attempts:
        return _record_failed(note, f"gave up after {_attempts(note.attempts)}: {error}", now)
    delay = backoff(note.attempts)
    with transaction.atomic():
        done = leases.settle(
            OUTBOX,
            note.pk,
            now,
            state=Notification.FAILING,
            last_error=error[:2000],
            # The sweep sends it again if the retry message is lost.
            due_at=now + timedelta(seconds=delay + config()["queue_grace"]),
        )
        if not done:
            return leases.state_of(OUTBOX, note.pk)
        note.state = Notification.FAILING
        changes.record(
            ChangeKind.NOTIFICATION_FAILING,
            _subject(note),
            at=now,
            error=error[:500],
            retry_in=delay,
        )
        leases.retry_on_commit(OUTBOX, note.pk, delay)
    return Notification.FAILING


def _record_failed(note: Notification, error: str, now: datetime) -> str:
    with transaction.atomic():
        done = leases.settle(
            OUTBOX, note.pk, now, state=Notification.FAILED, last_error=error[:2000]
        )
        if not done:
            return leases.state_of(OUTBOX, note.pk)
        note.state = Notification.FAILED
        changes.record(
            ChangeKind.NOTIFICATION_FAILED,
            _subject(note),
            at=now,
            error=error[:500],
            attempt=note.attempts,
        )
    return Notification.FAILED


def requeue_due_notifications(now: datetime, limit: int = 500) -> int:
    """Enqueue notifications left pending or failing past their time, and take back
    those sending past their lease (their worker died). Each is pushed later first, so
    a busy worker does not find a pile of copies."""
    cfg = config()
    return leases.requeue_due(
        OUTBOX,
        now,
        grace=cfg["queue_grace"],
        limit=limit,
        max_attempts=cfg["max_attempts"],
        give_up_row=do_give_up_notification,
    )


# What an admin can send again now.
RETRYABLE = (Notification.PENDING, Notification.FAILING, Notification.FAILED)


def do_retry_now(note: Notification, now: datetime) -> bool:
    """An admin's "retry now" (a pending or failing row becomes due now) or "send again"
    (a failed row is pending again, with all its attempts back), enqueued on commit.
    False (and nothing changed) for a row being sent or sent already; asking twice only
    enqueues twice, and the claim lets one worker send it. The last error stays until
    the next attempt replaces it."""
    with transaction.atomic():
        done = Notification.objects.filter(
            pk=note.pk, state__in=(Notification.PENDING, Notification.FAILING)
        ).update(due_at=now, updated_at=now)
        done = done or Notification.objects.filter(pk=note.pk, state=Notification.FAILED).update(
            state=Notification.PENDING, attempts=0, due_at=now, updated_at=now
        )
        if not done:
            return False
        note.refresh_from_db()
        changes.record(ChangeKind.NOTIFICATION_RETRY, _subject(note), at=now)
        transaction.on_commit(lambda: _enqueue(note.pk))
    return True
