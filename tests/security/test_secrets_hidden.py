"""No secret in pages, logs, audit rows or error texts: a source's token (shown once,
in the answer that made it), a webhook connector's secret, an alert channel's password.

SQL is not logged: settings pin `django.db.backends` to INFO, so even LOG_LEVEL=DEBUG
with DEBUG=True never writes query parameters (which would hold the connector settings).
"""

import json
import logging
import re

import pytest
from django.conf import settings
from django.test import Client

from supervisor.core.models import Action, Change, Source, Task
from supervisor.jobs.notifications import send_notification
from supervisor.jobs.operator_actions import perform_action
from supervisor.notify.models import Channel, Notification
from tests.support.cast import ADMIN, login_as
from tests.support.factories import make_tasks
from tests.support.walk import MATRIX

pytestmark = pytest.mark.django_db

WEBHOOK_SECRET = "whsec-0123456789-abcdefghij"
CHANNEL_PASSWORD = "chpw-9876543210-zyxwvu"
# Port 9 (discard) on loopback: nothing listens, every attempt fails at once.
CLOSED = "127.0.0.1:9"


@pytest.fixture
def everything_logged(caplog):
    caplog.set_level(logging.DEBUG)  # the root: every logger that propagates
    return caplog


def test_sql_parameters_are_never_logged():
    assert settings.LOGGING["loggers"]["django.db.backends"]["level"] == "INFO"


def test_no_secret_is_shown_logged_or_recorded(everything_logged, source):
    admin = Client()
    login_as(admin, ADMIN)

    # A source with a webhook connector: the token is in this answer and nowhere else.
    created = admin.post(
        "/admin/sources/new/",
        {
            "name": "hooked",
            "namespace": source.namespace.name,
            "scopes": ["ingest", "read", "act"],
            "connector": "webhook",
            "connector_settings": json.dumps(
                {"url": f"http://{CLOSED}/hook", "secret": WEBHOOK_SECRET, "timeout": 1}
            ),
        },
    )
    assert created.status_code == 200
    token = re.search(r'<code class="token">([^<]+)</code>', created.content.decode()).group(1)
    hooked = Source.objects.get(name="hooked")
    assert hooked.connector_settings["secret"] == WEBHOOK_SECRET
    assert "no-store" in created["Cache-Control"]
    secrets = {"token": token, "webhook secret": WEBHOOK_SECRET, "password": CHANNEL_PASSWORD}
    texts: dict[str, str] = {}

    # An alert channel whose Apprise URL carries a password, and its failing test message.
    target = f"json://alerts:{CHANNEL_PASSWORD}@{CLOSED}/x"
    assert admin.post(
        "/admin/channels/new/", {"name": "pager", "kind": "apprise", "target": target}
    ).status_code in (200, 302)
    channel = Channel.objects.get(name="pager")
    assert channel.target == target
    texts["POST channel test"] = _text(
        admin.post(f"/admin/channels/{channel.pk}/test/", follow=True)
    )
    for note in Notification.objects.filter(channel=channel):
        send_notification(note.pk)

    # The API with the token, and an action the webhook cannot deliver.
    bearer = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    make_tasks(hooked, 1)
    task = Task.objects.get(namespace=hooked.namespace, task_id="task:t0")
    for url in ("/api/v1/tasks", "/api/v1/flags", "/api/v1/tasks/task%3At0"):
        texts[f"GET {url}"] = _text(bearer.get(url))
    acted = bearer.post(
        "/api/v1/tasks/task%3At0/actions",
        json.dumps({"kind": "continue", "message": "go on"}),
        content_type="application/json",
    )
    texts["POST action"] = _text(acted)
    for action in Action.objects.all():
        perform_action(action.pk)
    texts["POST source test"] = _text(admin.post(f"/admin/sources/{hooked.pk}/test/", follow=True))
    texts["POST connector, secret kept"] = _text(
        admin.post(
            f"/admin/sources/{hooked.pk}/connector/",
            {
                "connector": "webhook",
                "connector_settings": json.dumps(
                    {"url": f"http://{CLOSED}/hook2", "secret": "********", "timeout": 1}
                ),
            },
            follow=True,
        )
    )
    hooked.refresh_from_db()
    assert hooked.connector_settings["secret"] == WEBHOOK_SECRET  # the mark kept it
    assert hooked.connector_settings["url"].endswith("/hook2")

    # Every page an admin can open, now that everything above exists.
    objects = {
        "source": hooked.pk,
        "channel": channel.pk,
        "task": task.pk,
        "note": Notification.objects.filter(channel=channel).first().pk,
    }
    for row in MATRIX:
        if row.method != "GET" or row.url.startswith("/api/v1/openapi"):
            continue
        try:
            url = row.url.format(**objects)
        except KeyError:
            continue
        texts[f"GET {url}"] = _text(admin.get(url, row.data, follow=True))
    texts["GET /metrics"] = _text(Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/metrics"))

    texts["log records"] = "\n".join(
        f"{r.name} {r.getMessage()} {r.args!r} {getattr(r, 'request', '')!r}"
        for r in everything_logged.records
    )
    texts["audit rows"] = json.dumps(list(Change.objects.values("kind", "payload")))
    texts["errors"] = json.dumps(
        [
            *Action.objects.values_list("last_error", flat=True),
            *Notification.objects.values_list("last_error", flat=True),
        ]
    )
    # The failures did happen, so their texts were looked at.
    assert Action.objects.exclude(last_error__isnull=True).exclude(last_error="").exists()
    assert Notification.objects.exclude(last_error__isnull=True).exclude(last_error="").exists()
    assert len(texts) > 30
    leaks = [
        (what, where)
        for where, text in texts.items()
        for what, secret in secrets.items()
        if secret in text
    ]
    assert not leaks, leaks
    assert token[:12] in texts[f"GET /admin/sources/{hooked.pk}/"]  # the prefix is shown


def _text(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()
