"""An admin's "send a test" for a channel: a test message through the outbox, so it
is retried and shown like any other."""

from __future__ import annotations

import uuid
from datetime import datetime

from . import content
from .models import Channel, Notification
from .outbox import do_enqueue_notification


def do_send_test(channel: Channel, now: datetime) -> Notification:
    key = f"test:c{channel.pk}:{uuid.uuid4().hex[:12]}"
    return do_enqueue_notification(
        key, channel, Notification.TEST, [], content.for_test(channel.name), now
    )
