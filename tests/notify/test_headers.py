"""Text that goes into a header drops every control character. A task's title is an
agent's text and becomes an email's Subject: a carriage return there made Django refuse
the message, which was then retried for ever; an escape, a Unicode line separator or a
direction override would reach the reader's mail client. Checked on a real SMTP
receiver on loopback."""

import json
import unicodedata
from datetime import timedelta
from email.header import decode_header, make_header

import pytest

from supervisor.core.ingest.apply import apply_events
from supervisor.jobs import notifications
from supervisor.notify.grouping import close_windows
from supervisor.notify.headers import header_text
from supervisor.notify.models import Channel, Notification, Route
from supervisor.notify.senders import send
from tests.support.alert_receivers import HttpReceiver, SmtpReceiver
from tests.support.alerts import T0, open_flag
from tests.support.factories import task_events

# What an agent may put in a title (the contract refuses NUL and lone surrogates, which
# the database cannot hold; those are checked at the sender below).
HOSTILE = {
    "carriage return": "\r",
    "line feed": "\n",
    "header injection": "\r\nBcc: evil@example.com\r\n",
    "escape": "\x1b[31m",
    "delete": "\x7f",
    "next line": "\x85",
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "direction override": "\u202e",
    "zero-width space": "\u200b",
    "tab and vertical tab": "\t\x0b\x0c",
}
DROPPED = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def controls_in(text: str) -> list[str]:
    return [hex(ord(c)) for c in text if unicodedata.category(c) in DROPPED]


@pytest.fixture
def smtp(db, settings):
    with SmtpReceiver() as receiver:
        settings.MAILERS = {
            "default": {
                "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "OPTIONS": {"host": "127.0.0.1", "port": receiver.port, "timeout": 5},
            }
        }
        yield receiver


def subject_of(headers: dict) -> str:
    return str(make_header(decode_header(headers["Subject"])))


@pytest.mark.parametrize("hostile", HOSTILE.values(), ids=HOSTILE.keys())
def test_an_alert_for_a_title_with_control_characters_is_sent_as_one_line(source, smtp, hostile):
    events = task_events(0, title=f"Fix{hostile}login")
    for event in events:
        if event["type"] == "run.finished":  # the result snippet goes in the body only
            event["data"]["summary"] = f"done{hostile}really"
    apply_events(source, events)
    with HttpReceiver() as http:
        channels = [
            Channel.objects.create(name="mail", kind="email", target="ops@example.com"),
            Channel.objects.create(
                name="json", kind="apprise", target=f"json://127.0.0.1:{http.port}/hook"
            ),
        ]
        for channel in channels:
            Route.objects.create(channel=channel, group_window=30)
        open_flag(source, 0, T0)
        close_windows(T0 + timedelta(seconds=31))
        for note in Notification.objects.all():
            sent = notifications.perform(note.pk)
            assert sent == "sent", Notification.objects.get(pk=note.pk).last_error
    (headers,) = smtp.headers
    assert "Bcc" not in headers
    for name, value in [*headers.items(), *http.headers[0].items()]:
        assert controls_in(value.replace("\r\n ", " ")) == [], name  # folding aside
    subject = subject_of(headers)
    assert controls_in(subject) == []
    assert subject.startswith("[critical] Stale result handed on: Fix") and "login 0" in subject
    (title,) = [json.loads(raw)["title"] for raw in http.raw]
    assert title == subject


def test_nul_and_lone_surrogates_never_reach_a_header(smtp):
    channel = Channel.objects.create(name="mail", kind="email", target="ops@example.com")
    send(channel, "k:\x00one", "a\x00b\ud800c\r\nd", "body", timeout=5)
    (headers,) = smtp.headers
    assert subject_of(headers) == "a b c d"
    assert headers["X-Supervisor-Key"] == "k: one"


def test_a_header_is_one_line_of_at_most_the_limit():
    assert header_text("  a\r\n\r\n\tb\u2028c\x1b[0m  ", limit=200) == "a b c [0m"
    assert header_text("x" * 300, limit=200) == "x" * 200
    assert header_text("Ünïcode — ✓ 日本") == "Ünïcode — ✓ 日本"
