"""Fixtures of the alert tests: real receivers on loopback (HTTP and SMTP) with a channel
and a route to each."""

import pytest

from supervisor.notify.models import Channel, Route
from tests.support.alert_receivers import HttpReceiver, SmtpReceiver


@pytest.fixture
def receivers(db, settings):
    with HttpReceiver() as http, SmtpReceiver() as smtp:
        settings.MAILERS = {
            "default": {
                "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "OPTIONS": {"host": "127.0.0.1", "port": smtp.port, "timeout": 5},
            }
        }
        channels = [
            Channel.objects.create(
                name="json", kind="apprise", target=f"json://127.0.0.1:{http.port}/hook"
            ),
            Channel.objects.create(
                name="ntfy", kind="apprise", target=f"ntfy://127.0.0.1:{http.port}/ops"
            ),
            Channel.objects.create(name="mail", kind="email", target="ops@example.com"),
        ]
        for channel in channels:
            Route.objects.create(channel=channel, group_window=30)
        yield http, smtp
