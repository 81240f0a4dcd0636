"""Named Celery tasks: send one notification (ids as arguments, idempotent by its
claim), and the notify sweep: close group windows, follow up, re-enqueue the unsent."""

from __future__ import annotations

from celery import shared_task

from supervisor.core import clock
from supervisor.core.sweep_failures import Failures

from . import outbox
from .followup import follow_up
from .grouping import JOB, close_windows


@shared_task(name="supervisor.notify_send", acks_late=True, soft_time_limit=60, time_limit=90)
def send_notification(notification_id: int) -> str:
    return outbox.perform(notification_id)


@shared_task(name="supervisor.notify_sweep", acks_late=True, soft_time_limit=120, time_limit=150)
def notify_sweep() -> int:
    return sweep(clock.now())


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
