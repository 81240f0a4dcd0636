"""Notification jobs: send one notification (claim -> send -> record, the row in
notify/outbox.py), and the notify sweep: close group windows, follow up, re-enqueue
the unsent."""

from __future__ import annotations

import logging

from celery import shared_task

from supervisor.core import clock
from supervisor.core.detection.sweep_failures import Failures
from supervisor.notify import outbox
from supervisor.notify.followup import follow_up
from supervisor.notify.grouping import JOB, close_windows
from supervisor.notify.senders import SendError, send

log = logging.getLogger(__name__)


@shared_task(name="supervisor.notify_send", acks_late=True, soft_time_limit=60, time_limit=90)
def send_notification(notification_id: int) -> str:
    return perform(notification_id)


@shared_task(name="supervisor.notify_sweep", acks_late=True, soft_time_limit=120, time_limit=150)
def notify_sweep() -> int:
    return sweep(clock.now())


def perform(pk: int) -> str:
    """Claim, send once, record; the state it was left in ("skipped": not ours)."""
    note = outbox.do_claim_notification(pk, clock.now())
    if note is None:
        return "skipped"
    try:
        send(note.channel, note.key, note.subject, note.body, timeout=outbox.config()["timeout"])
    except SendError as exc:
        return outbox.do_record_failure(note, str(exc), clock.now(), retryable=exc.retryable)
    except Exception as exc:  # a bug or an unexpected answer: keep the row honest
        log.exception("notification %s: send failed", pk)
        return outbox.do_record_failure(
            note, f"unexpected error: {exc}", clock.now(), retryable=True
        )
    return outbox.do_record_sent(note, clock.now())


def sweep(now) -> int:
    """One pass: windows that closed, follow-ups that are due, the unsent outbox. A step
    that raises is recorded and the next steps still run."""
    failures = Failures(JOB, now)
    written = 0
    with failures.isolated("step", "close_windows"):
        written += close_windows(now, failures)
    with failures.isolated("step", "follow_up"):
        written += follow_up(now, failures=failures)
    with failures.isolated("step", "requeue_due_notifications"):
        written += outbox.requeue_due_notifications(now)
    return written
