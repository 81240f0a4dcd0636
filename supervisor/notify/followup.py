"""While a notified flag stays open and unacknowledged: a re-notification every
`renotify_every` to the route's channel, and once, `escalate_after` its opening, a
message to the escalation channel. Snoozes, silences and quiet hours push both later; a
resolution or an acknowledgement closes the alert."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q

from supervisor.core.detection.sweep_failures import LOST_DATABASE, Failures
from supervisor.core.models import Flag

from . import content
from .grouping import JOB, held_until, silenced_until
from .models import FlagAlert, Notification
from .outbox import do_enqueue_notification


def follow_up(now: datetime, limit: int = 500, failures: Failures | None = None) -> int:
    """Write the re-notifications and escalations that are due; how many written. One
    that cannot be written is recorded and waits out a backoff; the others go on."""
    failures = failures or Failures(JOB, now)
    written = 0
    with transaction.atomic():
        due = list(
            FlagAlert.objects.select_for_update(of=("self",))
            .filter(state=FlagAlert.NOTIFIED)
            .filter(Q(renotify_at__lte=now) | Q(escalate_at__lte=now, escalated_at__isnull=True))
            .select_related("flag__task", "route__channel", "route__escalate_to")
            .order_by("pk")[:limit]
        )
        held = silenced_until([a.flag_id for a in due], now)
        for alert in due:
            subject = f"follow-up:{alert.pk}"
            try:
                with transaction.atomic():
                    written += _follow(alert, now, held.get(alert.flag_id))
            except LOST_DATABASE:
                raise
            except Exception as exc:
                later = failures.record("alert", subject, exc).retry_at
                FlagAlert.objects.filter(pk=alert.pk, renotify_at__lte=now).update(
                    renotify_at=later
                )
                FlagAlert.objects.filter(pk=alert.pk, escalate_at__lte=now).update(
                    escalate_at=later
                )
            else:
                failures.worked("alert", [subject])
    return written


def _follow(alert: FlagAlert, now: datetime, silenced: datetime | None = None) -> int:
    flag, route = alert.flag, alert.route
    if flag.state != Flag.OPEN or flag.acknowledged_at is not None:
        alert.state = FlagAlert.CLOSED
        alert.save(update_fields=["state"])
        return 0
    later = held_until(route, flag, now, silenced)
    if later is not None:
        if alert.renotify_at and alert.renotify_at <= now:
            alert.renotify_at = later
        if alert.escalate_at and alert.escalate_at <= now and alert.escalated_at is None:
            alert.escalate_at = later
        alert.save(update_fields=["renotify_at", "escalate_at"])
        return 0
    written = 0
    if alert.renotify_at and alert.renotify_at <= now:
        alert.renotified += 1
        key = f"renotify:c{route.channel_id}:f{flag.pk}:n{alert.renotified}"
        message = content.for_flag(flag, lead=f"Still open (reminder {alert.renotified}): ")
        written += _write(key, route.channel, Notification.RENOTIFY, flag, message, now)
        # From now, not from the last due time: a sweep that was late sends one, not many.
        alert.renotify_at = now + timedelta(seconds=route.renotify_every or 0)
        if not route.renotify_every:
            alert.renotify_at = None
    if alert.escalate_at and alert.escalate_at <= now and alert.escalated_at is None:
        if route.escalate_to and route.escalate_to.enabled:
            key = f"escalation:c{route.escalate_to_id}:f{flag.pk}:r{route.pk}"
            message = content.for_flag(flag, lead="Escalated, unacknowledged: ")
            written += _write(key, route.escalate_to, Notification.ESCALATION, flag, message, now)
        alert.escalated_at = now
    alert.save(update_fields=["renotified", "renotify_at", "escalated_at"])
    return written


def _write(key, channel, kind, flag, message, now) -> int:
    return do_enqueue_notification(key, channel, kind, [flag.pk], message, now) is not None
