"""A flag opening becomes a waiting alert for each of its routes, in the same
transaction as the opening. The first opening for a route starts a group window; later
ones join it. When it closes, each channel gets one message for the flags of the burst
still open: one flag, its own message; several, the count and the worst few. A flag
resolved (or acknowledged) inside the window sends nothing."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from datetime import datetime, timedelta

from django.db import transaction

from supervisor.core.detection.sweep_failures import LOST_DATABASE, Failures
from supervisor.core.models import Flag, Silence
from supervisor.core.triage import silences

from . import content
from .models import FlagAlert, Notification, Route
from .outbox import do_enqueue_notification
from .routing import quiet_until, routes_for

JOB = "notify_sweep"  # the failures of alert sweeps are recorded under it


def flags_opened(flags: list[Flag], now: datetime) -> int:
    """Called inside the openings' transaction: how many alerts now wait. Each route's
    alerts join its open window, or start one."""
    alerts, windows = [], {}
    for flag, routes in routes_for(flags):
        for route in routes:
            if route.pk not in windows:
                window = (
                    FlagAlert.objects.filter(route=route, state=FlagAlert.WAITING, due_at__gt=now)
                    .order_by("due_at")
                    .values_list("due_at", flat=True)
                    .first()
                )
                windows[route.pk] = window or now + timedelta(seconds=route.group_window)
            alerts.append(FlagAlert(flag=flag, route=route, due_at=windows[route.pk]))
    FlagAlert.objects.bulk_create(alerts)
    return len(alerts)


def group_key(kind: str, channel_pk: int, flag_pks: list[int]) -> str:
    """The same burst to the same channel is the same message, whoever writes it."""
    if len(flag_pks) == 1:
        return f"{kind}:c{channel_pk}:f{flag_pks[0]}"
    digest = hashlib.sha256(",".join(map(str, sorted(flag_pks))).encode()).hexdigest()[:20]
    return f"{kind}:c{channel_pk}:g{digest}"


def close_windows(now: datetime, failures: Failures | None = None) -> int:
    """Turn the waiting alerts whose window closed into messages; how many written. A
    channel's message that cannot be written is recorded and its alerts wait out a
    backoff; the other channels' go on."""
    failures = failures or Failures(JOB, now)
    written = 0
    with transaction.atomic():
        due = list(
            FlagAlert.objects.select_for_update(of=("self",))
            .filter(state=FlagAlert.WAITING, due_at__lte=now)
            .select_related("flag__task", "route__channel")
        )
        by_channel: dict[int, list[FlagAlert]] = defaultdict(list)
        held = silenced_until([a.flag_id for a in due], now)
        for alert in due:
            flag = alert.flag
            if flag.state != Flag.OPEN or flag.acknowledged_at is not None:
                alert.state = FlagAlert.DROPPED
                alert.save(update_fields=["state"])
                continue
            later = held_until(alert.route, flag, now, held.get(flag.pk))
            if later is not None:  # quiet hours, snoozed, silenced: the window reopens then
                alert.due_at = later
                alert.save(update_fields=["due_at"])
                continue
            by_channel[alert.route.channel_id].append(alert)
        for channel_pk, alerts in by_channel.items():
            subject = f"window:channel:{channel_pk}"
            try:
                with transaction.atomic():
                    written += _write_window(alerts, now)
            except LOST_DATABASE:
                raise
            except Exception as exc:
                failure = failures.record("alert", subject, exc)
                FlagAlert.objects.filter(pk__in=[a.pk for a in alerts]).update(
                    due_at=failure.retry_at
                )
            else:
                failures.worked("alert", [subject])
    return written


def _write_window(alerts: list[FlagAlert], now: datetime) -> int:
    flags = list({a.flag.pk: a.flag for a in alerts}.values())
    kind = Notification.OPENED if len(flags) == 1 else Notification.GROUPED
    channel = alerts[0].route.channel
    pks = [f.pk for f in flags]
    note = do_enqueue_notification(
        group_key(kind, channel.pk, pks), channel, kind, pks, content.for_flags(flags), now
    )
    for alert in alerts:
        _mark_notified(alert, now)
    return note is not None


def silenced_until(flag_pks: list[int], now: datetime) -> dict[int, datetime]:
    """When the silence holding each of these flags ends, for those one holds: the
    active silences read once a sweep, matched in one query."""
    return {pk: s.ends_at for pk, s in silences.matching(flag_pks, silences.active(now)).items()}


def held_until(
    route: Route, flag: Flag, now: datetime, silenced: datetime | None = None
) -> datetime | None:
    """Until when an alert of `flag` waits: its snooze, its silence (`silenced`, from
    `silenced_until`), the route's quiet hours, whichever ends last; None: send now."""
    snoozed = flag.snoozed_until if flag.snoozed_until and flag.snoozed_until > now else None
    quiet = quiet_until(route, now)
    return max(filter(None, (snoozed, silenced, quiet)), default=None)


def silence_lifted(silence: Silence, now: datetime) -> int:
    """A silence ended or changed (`silence` as it was): the alerts it held until its
    end are due now, and the next sweep sends them or holds them again (another
    silence, a snooze, quiet hours), as they would have been at its end."""
    matched = Flag.objects.filter(silences.matcher(silence, silences.alone(silence)))
    alerts = FlagAlert.objects.filter(flag__in=matched.values("pk"))
    moved = alerts.filter(state=FlagAlert.WAITING, due_at=silence.ends_at).update(due_at=now)
    notified = alerts.filter(state=FlagAlert.NOTIFIED)
    moved += notified.filter(renotify_at=silence.ends_at).update(renotify_at=now)
    moved += notified.filter(escalate_at=silence.ends_at, escalated_at__isnull=True).update(
        escalate_at=now
    )
    return moved


def _mark_notified(alert: FlagAlert, now: datetime) -> None:
    route = alert.route
    alert.state, alert.notified_at = FlagAlert.NOTIFIED, now
    if route.renotify_every:
        alert.renotify_at = now + timedelta(seconds=route.renotify_every)
    if route.escalate_after and route.escalate_to_id:
        # Escalation counts from the opening, not from the first message.
        alert.escalate_at = alert.flag.opened_at + timedelta(seconds=route.escalate_after)
    alert.save(update_fields=["state", "notified_at", "renotify_at", "escalate_at"])
