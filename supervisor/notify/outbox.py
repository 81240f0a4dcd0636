"""The notification outbox: each message is a row with a stable key, written once (the
unique key drops repeats), claimed by a worker with a compare-and-swap and a lease, sent
once per attempt, retried with backoff while it fails, never dropped; the sweep
re-enqueues what is left pending, failing or past its lease (as core/actions.py does)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q

from supervisor.core import dispatch
from supervisor.core.models import Change

from .content import Message
from .models import Channel, Notification

log = logging.getLogger(__name__)


def config() -> dict:
    return settings.SUPERVISOR_NOTIFY


def _change(note: Notification, kind: str, now: datetime, **details) -> None:
    Change.objects.create(
        at=now,
        namespace=None,
        kind=kind,
        subject_type="outbox",  # Change.subject_type holds 10 characters
        subject_id=str(note.pk),
        payload={"notification": note.pk, "key": note.key, "state": note.state, **details},
    )


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
            _change(note, "notification.queued", now, message=kind)
            transaction.on_commit(lambda: _enqueue(note.pk))
    except IntegrityError:
        return None
    return note


def _enqueue(pk: int, countdown: float | None = None) -> None:
    dispatch.enqueue(dispatch.SEND_NOTIFICATION, pk, countdown=countdown)


def do_claim_notification(pk: int, now: datetime) -> Notification | None:
    """pending/failing -> sending (or a sending one whose lease ran out: its worker
    died), with a new lease; None when another worker holds it or it was sent."""
    lease = timedelta(seconds=config()["lease"])
    with transaction.atomic():
        claimed = (
            Notification.objects.filter(pk=pk)
            .filter(
                Q(state__in=(Notification.PENDING, Notification.FAILING))
                | Q(state=Notification.SENDING, due_at__lte=now)
            )
            .update(
                state=Notification.SENDING,
                attempts=F("attempts") + 1,
                due_at=now + lease,
                updated_at=now,
            )
        )
        if not claimed:
            return None
        return Notification.objects.select_related("channel").get(pk=pk)


def do_record_sent(note: Notification, now: datetime) -> str:
    with transaction.atomic():
        done = Notification.objects.filter(pk=note.pk, state=Notification.SENDING).update(
            state=Notification.SENT, sent_at=now, updated_at=now
        )
        if not done:  # another worker finished it first (our lease had run out)
            return Notification.objects.get(pk=note.pk).state
        note.state = Notification.SENT
        _change(note, "notification.sent", now, attempt=note.attempts)
    return Notification.SENT


def backoff(attempts: int, retryable: bool) -> float:
    """Exponential from `backoff`, capped; a send that cannot work as configured
    (a bad URL) waits the longest, for an admin to fix the channel."""
    cfg = config()
    if not retryable:
        return cfg["max_backoff"]
    return min(cfg["backoff"] * 2 ** max(attempts - 1, 0), cfg["max_backoff"])


def do_record_failure(note: Notification, error: str, now: datetime, *, retryable: bool) -> str:
    """failing, retried later: a notification is never given up on."""
    delay = backoff(note.attempts, retryable)
    with transaction.atomic():
        done = Notification.objects.filter(pk=note.pk, state=Notification.SENDING).update(
            state=Notification.FAILING,
            last_error=error[:2000],
            # The sweep sends it again if the retry message is lost.
            due_at=now + timedelta(seconds=delay + config()["queue_grace"]),
            updated_at=now,
        )
        if not done:
            return Notification.objects.get(pk=note.pk).state
        note.state = Notification.FAILING
        _change(note, "notification.failing", now, error=error[:500], retry_in=delay)
        transaction.on_commit(lambda: _enqueue(note.pk, countdown=delay))
    return Notification.FAILING


def requeue_due_notifications(now: datetime, limit: int = 500) -> int:
    """Enqueue notifications left pending or failing past their time, and take back
    those sending past their lease (their worker died). Each is pushed later first, so
    a busy worker does not find a pile of copies."""
    grace = timedelta(seconds=config()["queue_grace"])
    unsent = (Notification.PENDING, Notification.FAILING, Notification.SENDING)
    due = list(
        Notification.objects.filter(state__in=unsent, due_at__lte=now)
        .order_by("due_at")
        .values_list("pk", "state")[:limit]
    )
    requeued = 0
    for pk, state in due:
        back = Notification.PENDING if state == Notification.SENDING else state
        with transaction.atomic():
            taken = Notification.objects.filter(pk=pk, state=state, due_at__lte=now).update(
                state=back, due_at=now + grace, updated_at=now
            )
            if taken:
                requeued += 1
                transaction.on_commit(lambda pk=pk: _enqueue(pk))
    return requeued


def do_retry_now(note: Notification, now: datetime) -> bool:
    """An admin's "retry now": a pending or failing row becomes due now and is enqueued
    on commit. False (and nothing changed) for a row being sent or sent already; asking
    twice only enqueues twice, and the claim lets one worker send it."""
    with transaction.atomic():
        done = Notification.objects.filter(
            pk=note.pk, state__in=(Notification.PENDING, Notification.FAILING)
        ).update(due_at=now, updated_at=now)
        if not done:
            return False
        note.refresh_from_db()
        _change(note, "notification.retry", now)
        transaction.on_commit(lambda: _enqueue(note.pk))
    return True
