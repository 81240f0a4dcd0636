"""An admin's edits of alert channels and routes: each is a do_* function that also
appends to the change log, so the audit page answers "who disabled the pager channel".

A channel's target is a secret (Apprise URLs carry tokens and passwords): a change
names the channel and its masked target, and says which fields changed, never a target.
"""

from __future__ import annotations

from django.db import transaction

from supervisor.core import changes
from supervisor.core.access.roles import actor_name
from supervisor.core.changes import ChangeKind

from .models import Channel, Route

CHANNEL_FIELDS = ("name", "kind", "target")
ROUTE_FIELDS = (
    "name",
    "channel_id",
    "enabled",
    "kinds",
    "sources",
    "environments",
    "min_severity",
    "quiet_start",
    "quiet_end",
    "quiet_tz",
    "group_window",
    "renotify_every",
    "escalate_after",
    "escalate_to_id",
)


def _channel(channel: Channel, by) -> changes.Subject:
    facts = {"actor": actor_name(by), "channel": channel.pk, "target": channel.masked()}
    return changes.Subject("channel", channel.name, None, facts)


def _route(route: Route, by) -> changes.Subject:
    facts = {"actor": actor_name(by), "route": route.pk, "channel": route.channel.name}
    return changes.Subject("route", str(route), None, facts)


def _changed(before, after, fields: tuple[str, ...]) -> list[str]:
    # Field names only: a value may be a secret (a channel's target).
    return [
        name.removesuffix("_id") for name in fields if getattr(before, name) != getattr(after, name)
    ]


@transaction.atomic
def do_save_channel(channel: Channel, *, by=None) -> Channel:
    """Save a new or edited channel (checked by the form), recorded with who did it."""
    before = Channel.objects.filter(pk=channel.pk).first() if channel.pk else None
    channel.save()
    if before is None:
        changes.record(ChangeKind.CHANNEL_CREATED, _channel(channel, by), kind=channel.kind)
    else:
        changed = _changed(before, channel, CHANNEL_FIELDS)
        renamed = {"previous": before.name} if before.name != channel.name else {}
        changes.record(ChangeKind.CHANNEL_EDITED, _channel(channel, by), changed=changed, **renamed)
    return channel


@transaction.atomic
def do_set_channel_enabled(channel: Channel, enabled: bool, *, by=None) -> bool:
    """Enable or disable a channel; False (and nothing recorded) when it already was."""
    done = Channel.objects.filter(pk=channel.pk, enabled=not enabled).update(enabled=enabled)
    channel.enabled = enabled
    if done:
        kind = ChangeKind.CHANNEL_ENABLED if enabled else ChangeKind.CHANNEL_DISABLED
        changes.record(kind, _channel(channel, by))
    return bool(done)


@transaction.atomic
def do_save_route(route: Route, *, by=None) -> Route:
    """Save a new or edited route (checked by the form), recorded with who did it."""
    before = Route.objects.filter(pk=route.pk).first() if route.pk else None
    route.save()
    if before is None:
        changes.record(ChangeKind.ROUTE_CREATED, _route(route, by), enabled=route.enabled)
    else:
        changed = _changed(before, route, ROUTE_FIELDS)
        changes.record(
            ChangeKind.ROUTE_EDITED, _route(route, by), changed=changed, enabled=route.enabled
        )
    return route
