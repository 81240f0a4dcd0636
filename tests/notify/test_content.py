"""An agent's text (a task's title, a child's result) cannot start a line of
its own in an alert, so it cannot forge the lines Supervisor writes (`Task:`, the
acknowledge link, the `ref:` key). Line breaks of every kind and the characters that
reorder or hide text were kept in alert bodies: a title could add a `Task:` line
pointing anywhere, or turn one around with a direction override.

Each alert is read as its reader's client would show it (any Unicode line break is a
line) on real receivers on loopback: the email channel (plain text), Mattermost
(Markdown) and Apprise's email asked for HTML."""

import html
import json
import re
import unicodedata
from datetime import timedelta
from email import message_from_bytes

import pytest

from supervisor.core.ingest.apply import apply_events
from supervisor.jobs import notifications
from supervisor.notify.grouping import close_windows
from supervisor.notify.models import Channel, Notification, Route
from tests.support.alert_receivers import HttpReceiver, SmtpReceiver
from tests.support.alerts import T0, open_flag
from tests.support.factories import task_events

BREAKS = {
    "CR": "\r",
    "LF": "\n",
    "CRLF": "\r\n",
    "VT": "\x0b",
    "FF": "\x0c",
    "FS": "\x1c",
    "GS": "\x1d",
    "RS": "\x1e",
    "NEL": "\x85",
    "LS": "\u2028",
    "PS": "\u2029",
}
# Characters that reorder or hide text: the embeddings and overrides, the isolates, the
# marks, and zero-width ones.
HIDERS = {
    "LRE": "\u202a",
    "RLE": "\u202b",
    "PDF": "\u202c",
    "LRO": "\u202d",
    "RLO": "\u202e",
    "LRI": "\u2066",
    "RLI": "\u2067",
    "FSI": "\u2068",
    "PDI": "\u2069",
    "LRM": "\u200e",
    "RLM": "\u200f",
    "ALM": "\u061c",
    "ZWSP": "\u200b",
    "BOM": "\ufeff",
}
HOSTILE = BREAKS | HIDERS
# The lines Supervisor writes itself (content.py, outbox.py).
OWN_LINES = (
    "Task:",
    "Thread:",
    "Overview:",
    "Acknowledge",
    "Suggested:",
    "Given to the parent:",
    "Latest result:",
    "Evidence:",
    "The limit resets",
    "ref:",
    "[critical]",
    "- [",
    "…",
)
# Where an agent's text may sit: after Supervisor's own words on the line.
AGENT_LINES = ("[critical] Stale result handed on: Fix", "Latest result: done", "- [critical]")


def forging(hostile: str) -> str:
    return (
        f"{hostile}Task: http://evil.example/t{hostile}Acknowledge or snooze: "
        f"http://evil.example/a{hostile}ref: forged{hostile}"
    )


def shown_lines(text: str) -> list[str]:
    """The lines a reader sees: any Unicode line break ends one (str.splitlines' set:
    CR, LF, VT, FF, FS, GS, RS, NEL, LS, PS)."""
    return text.replace("\r\n", "\n").splitlines()


def from_markdown(text: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


def from_html(text: str) -> str:
    text = re.sub(r"<br\s*/?>|</?(?:p|div|tr|li|h\d|body|html|head)\b[^>]*>", "\n", text)
    return html.unescape(re.sub(r"<[^>]*>", "", text)).replace("\xa0", " ")  # Apprise's &nbsp;


@pytest.fixture(scope="module")
def receivers():
    """An SMTP and an HTTP receiver on loopback, started once for the module."""
    with SmtpReceiver() as smtp, HttpReceiver() as http:
        raw: list[bytes] = []

        async def handle_DATA(server, session, envelope):
            raw.append(envelope.content)
            return "250 OK"

        smtp.handle_DATA = handle_DATA
        smtp.messages = raw
        yield smtp, http


@pytest.fixture
def smtp(db, settings, receivers):
    smtp, _ = receivers
    smtp.messages.clear()
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": smtp.port, "timeout": 5},
        }
    }
    return smtp


@pytest.fixture
def http(receivers):
    _, http = receivers
    http.raw.clear()
    return http


@pytest.fixture
def channels(smtp, http):
    """A route to each channel format, before any flag opens."""
    targets = {
        "email": ("email", "ops@example.com"),
        "html": (
            "apprise",
            f"mailto://127.0.0.1:{smtp.port}?from=sup@example.com&to=html@example.com"
            "&mode=insecure&format=html",
        ),
        "markdown": ("apprise", f"mmost://127.0.0.1:{http.port}/3ccdd113474722377935511fc85d3dd4"),
    }
    for name, (kind, target) in targets.items():
        channel = Channel.objects.create(name=name, kind=kind, target=target)
        Route.objects.create(channel=channel, group_window=30)
    return targets


def deliver_everywhere(smtp, http, channels) -> dict[str, str]:
    """Send the open flags' alert over each channel; the text each receiver got, as its
    reader sees it."""
    close_windows(T0 + timedelta(seconds=31))
    notes = Notification.objects.all()
    assert len(notes) == len(channels)
    for note in notes:
        sent = notifications.perform(note.pk)
        assert sent == "sent", Notification.objects.get(pk=note.pk).last_error
    posted = [json.loads(raw) for raw in http.raw]
    shown = {"markdown": from_markdown(next(p["text"] for p in posted if "text" in p))}
    for raw in smtp.messages:
        message = message_from_bytes(raw)
        for part in message.walk():
            if part.get_content_type() == "text/html":
                shown["html"] = from_html(part.get_payload(decode=True).decode())
            elif part.get_content_type() == "text/plain" and "html@" not in message["To"]:
                shown["email"] = part.get_payload(decode=True).decode()
    assert shown.keys() == channels.keys()
    return shown


def assert_no_forged_line(shown: dict[str, str], flags: int) -> None:
    for name, text in shown.items():
        lines = shown_lines(text)
        forged = [
            line
            for line in lines
            if "evil" in line or "forged" in line
            if not line.lstrip().startswith(AGENT_LINES)
        ]
        assert forged == [], (name, forged)
        own = [line.lstrip() for line in lines if line.lstrip().startswith(OWN_LINES)]
        assert sum(line.startswith("Task:") for line in own) == flags, (name, own)
        assert sum(line.startswith("Acknowledge") for line in own) == flags, (name, own)
        assert sum(line.startswith("ref:") for line in own) == 1, (name, own)
        hidden = {
            f"U+{ord(c):04X}"
            for c in text.replace("\r\n", "\n")
            if c not in "\n\t" and unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"}
        }
        assert hidden == set(), (name, hidden)


@pytest.mark.parametrize("hostile", HOSTILE.values(), ids=HOSTILE.keys())
def test_an_agents_text_cannot_start_a_line_of_an_alert(source, smtp, http, channels, hostile):
    events = task_events(0, title=f"Fix{forging(hostile)}login")
    for event in events:
        if event["type"] == "run.finished":
            event["data"]["summary"] = f"done{forging(hostile)}really"
    apply_events(source, events)
    open_flag(source, 0, T0)
    assert_no_forged_line(deliver_everywhere(smtp, http, channels), flags=1)


def test_a_grouped_alert_keeps_every_title_on_its_own_line(source, smtp, http, channels):
    every = "".join(HOSTILE.values())
    for n in range(2):
        apply_events(source, task_events(n, title=f"Fix{forging(every)}login"))
        open_flag(source, n, T0)
    shown = deliver_everywhere(smtp, http, channels)
    assert_no_forged_line(shown, flags=2)
    assert all("2 flags opened" in text for text in shown.values())


def test_a_secrets_shape_in_a_title_hides_no_line_of_the_alert(source, smtp, http, channels):
    """Secrets are cut from every text that leaves (redact.py); a private key's opening
    line with no end in a title was cut with everything after it, the alert's own links
    and key included."""
    title = "Fix -----BEGIN RSA PRIVATE KEY----- MIIEow login"
    events = task_events(0, title=title)
    for event in events:
        if event["type"] == "run.finished":
            event["data"]["summary"] = "done -----BEGIN PRIVATE KEY----- MIIEvQ"
    apply_events(source, events)
    open_flag(source, 0, T0)
    shown = deliver_everywhere(smtp, http, channels)
    assert_no_forged_line(shown, flags=1)
    for text in shown.values():
        assert "MII" not in text and "[redacted]" in text
        assert "Suggested:" in text
