"""Notify's figure on /metrics: the outbox by state (registered with core/queries/metrics.py)."""

from __future__ import annotations

from django.db.models import Count

from supervisor.core.queries.metrics import Family

from .models import Notification

NOTIFICATION_STATES = (
    Notification.PENDING,
    Notification.SENDING,
    Notification.SENT,
    Notification.FAILING,
    Notification.FAILED,
)


def notifications_family() -> Family:
    counts = dict.fromkeys(NOTIFICATION_STATES, 0)
    counts.update(dict(Notification.objects.order_by().values_list("state").annotate(n=Count("*"))))
    return Family(
        "supervisor_notifications",
        "gauge",
        "Alert messages in the outbox, by state (failing ones are retried; failed ones wait "
        "for an admin to send them again).",
        [({"state": state}, n) for state, n in counts.items()],
    )
