"""An admin's "send a test" for a channel: a test message through the outbox, so it
is retried and shown like any other; and what the outbound guard says of a channel's
target before it is saved or tested."""

from __future__ import annotations

import uuid
from datetime import datetime

import apprise

from supervisor.core import outbound

from . import content
from .models import Channel, Notification
from .outbox import do_enqueue_notification

# Apprise's generic HTTP services post to the URL's own host; for the others the URL's
# "host" may be a token (`discord://WEBHOOK_ID/…`), and a bare number there is no address.
_HOST_IS_THE_ADDRESS = frozenset({"json", "xml", "form"})  # `protocol`; jsons:// too


def do_send_test(channel: Channel, now: datetime) -> Notification:
    key = f"test:c{channel.pk}:{uuid.uuid4().hex[:12]}"
    return do_enqueue_notification(
        key, channel, Notification.TEST, [], content.for_test(channel.name), now
    )


def target_refusal(kind: str, target: str) -> str | None:
    """Why the outbound guard refuses this target, judged without resolving names (a
    send checks the resolved addresses again), or None. An Apprise URL is judged by
    the hosts Apprise reads from it; an email channel goes to the configured mailer."""
    if kind != Channel.APPRISE:
        return None
    services = apprise.Apprise()
    services.add(target)
    for service in services:
        numbers_may_be_names = service.protocol not in _HOST_IS_THE_ADDRESS
        for host in (getattr(service, "host", None), getattr(service, "smtp_host", None)):
            if not host:
                continue
            refusal = outbound.host_refusal(host, numbers_may_be_names=numbers_may_be_names)
            if refusal:
                return refusal.without_address()
    return None
