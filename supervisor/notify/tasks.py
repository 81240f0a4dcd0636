"""Named Celery tasks: send one notification (ids as arguments, idempotent by its
claim), and the notify sweep: close group windows, follow up, re-enqueue the unsent."""

from __future__ import annotations

from celery import shared_task

from supervisor.core import clock

from . import outbox
from .followup import follow_up
from .grouping import close_windows


@shared_task(name="supervisor.notify_send", acks_late=True, soft_time_limit=60, time_limit=90)
def send_notification(notification_id: int) -> str:
    return outbox.perform(notification_id)


@shared_task(name="supervisor.notify_sweep", acks_late=True, soft_time_limit=120, time_limit=150)
def notify_sweep() -> int:
    return sweep(clock.now())


def sweep(now) -> int:
    """One pass: windows that closed, follow-ups that are due, the unsent outbox."""
    return close_windows(now) + follow_up(now) + outbox.requeue_due_notifications(now)
