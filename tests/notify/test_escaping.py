"""What an agent wrote (a task title, a child's result) reaches every service as text:
inert in HTML services (email through Apprise, Telegram), in Markdown services
(Discord, Mattermost, ntfy's Markdown), in Slack's own markup, and unchanged where the
service shows plain text. Loopback services are real receivers; Telegram and Discord,
whose hosts cannot be reached here, are stopped at the network edge (the HTTP request
Apprise's plugin makes) and the payload they would get is read."""

import json
import re
from datetime import timedelta
from email import message_from_bytes
from urllib.parse import urlsplit

import pytest
import requests

from supervisor.core.ingest.apply import apply_events
from supervisor.jobs import notifications
from supervisor.notify.grouping import close_windows
from supervisor.notify.models import Channel, Notification, Route
from tests.support.alert_receivers import HttpReceiver, SmtpReceiver
from tests.support.alerts import T0, open_flag
from tests.support.factories import task_events

TITLE = 'Fix <a href="http://evil.example/t">login</a>'
RESULT = (
    "done <img src=http://evil.example/p.png> see [the fix](http://evil.example/r) "
    "or <http://evil.example/s|open it> @everyone"
)

# An opening bracket or tag that no backslash escapes: Markdown would render it.
LIVE_MARKUP = re.compile(r"(?<!\\)[<\[]")


@pytest.fixture
def alert(source):
    """A stale-result flag on a task whose title and latest result carry markup."""
    events = task_events(0, title=TITLE)
    for event in events:
        if event["type"] == "run.finished":
            event["data"]["summary"] = RESULT
    apply_events(source, events)
    return source


def deliver(source, target: str) -> None:
    channel = Channel.objects.create(name="under-test", kind="apprise", target=target)
    Route.objects.create(channel=channel, group_window=30)
    open_flag(source, 0, T0)
    close_windows(T0 + timedelta(seconds=31))
    (note,) = Notification.objects.all()
    assert notifications.perform(note.pk) == "sent", Notification.objects.get(pk=note.pk).last_error


class ServiceEdge:
    """Answers, in place of a service's host, every request Apprise's plugin sends it."""

    def __init__(self, monkeypatch, host: str, answer: bytes):
        self.payloads: list[dict] = []
        passthrough = requests.Session.send

        def send(session, request, **kwargs):
            if urlsplit(request.url).hostname != host:
                return passthrough(session, request, **kwargs)
            self.payloads.append(json.loads(request.body))
            response = requests.Response()
            response.status_code, response._content = 200, answer
            response.url, response.request = request.url, request
            return response

        monkeypatch.setattr(requests.Session, "send", send)


@pytest.fixture
def smtp(db):
    with SmtpReceiver() as receiver:
        raw: list[bytes] = []

        async def handle_DATA(server, session, envelope):
            raw.append(envelope.content)
            return "250 OK"

        receiver.handle_DATA = handle_DATA
        receiver.messages = raw
        yield receiver


def mailto(port: int, extra: str = "") -> str:
    return f"mailto://127.0.0.1:{port}?from=sup@example.com&to=ops@example.com&mode=insecure{extra}"


def test_email_through_apprise_is_plain_text_with_the_markup_as_written(alert, smtp):
    deliver(alert, mailto(smtp.port))
    (raw,) = smtp.messages
    message = message_from_bytes(raw)
    assert message.get_content_type() == "text/plain"
    text = message.get_payload(decode=True).decode()
    assert '<a href="http://evil.example/t">login</a>' in message["Subject"]
    assert "<img src=http://evil.example/p.png>" in text


def test_email_asked_for_as_html_gets_the_markup_escaped(alert, smtp):
    deliver(alert, mailto(smtp.port, "&format=html"))
    (raw,) = smtp.messages
    html = next(p for p in message_from_bytes(raw).walk() if p.get_content_type() == "text/html")
    text = html.get_payload(decode=True).decode()
    assert "&lt;img&nbsp;src=http://evil.example/p.png&gt;" in text  # Apprise keeps spaces
    assert "<img" not in text and "<a " not in text


def test_telegram_gets_html_with_the_markup_escaped(alert, monkeypatch):
    edge = ServiceEdge(monkeypatch, "api.telegram.org", b'{"ok": true, "result": {}}')
    deliver(alert, "tgram://123456789:abcdefghijklmnop/12315544/")
    (payload,) = edge.payloads
    assert payload["parse_mode"] == "HTML"
    assert payload["text"].startswith(
        '<b>[critical] Stale result handed on: Fix &lt;a href="http://evil.example/t"&gt;'
        "login&lt;/a&gt; 0</b>\r\n"
    )
    assert (
        "done &lt;img src=http://evil.example/p.png&gt; see [the fix](http://evil.example/r) "
        "or &lt;http://evil.example/s|open it&gt; @everyone"
    ) in payload["text"]
    assert "<a " not in payload["text"] and "<img" not in payload["text"]


def test_discord_gets_the_markdown_escaped_and_no_mention(alert, monkeypatch):
    edge = ServiceEdge(monkeypatch, "discord.com", b"{}")
    deliver(alert, "discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js")
    (payload,) = edge.payloads
    content = payload["content"]
    assert content.startswith(
        r"\[critical\] Stale result handed on\: Fix \<a href\=\"http://evil.example/t\"\>login"
        r"\<\/a\> 0"
    )
    assert (
        r"done \<img src\=http://evil.example/p.png\> see \[the fix\]\(http://evil.example/r\) "
        r"or \<http://evil.example/s\|open it\> @" + "\u200beveryone"
    ) in content
    assert not LIVE_MARKUP.search(content) and "@everyone" not in content


def test_discord_keeps_the_alerts_own_links_working(alert, monkeypatch):
    edge = ServiceEdge(monkeypatch, "discord.com", b"{}")
    deliver(alert, "discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js")
    (note,) = Notification.objects.all()
    links = [line.split(": ", 1)[1] for line in note.body.splitlines() if "http" in line[:30]]
    assert links and all(link in edge.payloads[0]["content"] for link in links)


def test_slack_gets_its_link_syntax_escaped(alert, monkeypatch):
    edge = ServiceEdge(monkeypatch, "hooks.slack.com", b"ok")
    deliver(alert, "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/#general")
    (payload,) = edge.payloads
    assert payload["mrkdwn"] is False
    (attachment,) = payload["attachments"]
    assert "or &lt;http://evil.example/s|open it&gt; @everyone" in attachment["text"]
    assert "<http://evil.example/s|" not in attachment["text"]


def test_mattermost_on_loopback_gets_the_markdown_escaped(alert):
    with HttpReceiver() as http:
        deliver(alert, f"mmost://127.0.0.1:{http.port}/3ccdd113474722377935511fc85d3dd4")
        (raw,) = http.raw
    text = json.loads(raw)["text"]
    assert r"see \[the fix\]\(http://evil.example/r\)" in text
    assert r"Fix \<a href" in text and "@\u200beveryone" in text
    assert not LIVE_MARKUP.search(text)


def test_ntfy_asked_for_markdown_gets_raw_html_escaped_too(alert):
    """Apprise's own text-to-Markdown leaves `<` live: raw HTML in Markdown."""
    with HttpReceiver() as http:
        deliver(alert, f"ntfy://127.0.0.1:{http.port}/ops?format=markdown")
        (raw,) = http.raw
    message = json.loads(raw)["message"]
    assert r"done \<img src\=http://evil.example/p.png\>" in message
    assert not LIVE_MARKUP.search(message)


def test_json_gets_the_text_exactly_as_written(alert):
    with HttpReceiver() as http:
        deliver(alert, f"json://127.0.0.1:{http.port}/hook")
        (raw,) = http.raw
    posted = json.loads(raw)
    (note,) = Notification.objects.all()
    assert posted["title"] == note.subject and posted["message"] == note.body
    assert RESULT in posted["message"]


def test_the_email_channel_sends_plain_text_only(alert, smtp, settings):
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": smtp.port, "timeout": 5},
        }
    }
    channel = Channel.objects.create(name="mail", kind="email", target="ops@example.com")
    Route.objects.create(channel=channel, group_window=30)
    open_flag(alert, 0, T0)
    close_windows(T0 + timedelta(seconds=31))
    (note,) = Notification.objects.all()
    assert notifications.perform(note.pk) == "sent"
    (raw,) = smtp.messages
    message = message_from_bytes(raw)
    assert not message.is_multipart() and message.get_content_type() == "text/plain"
    assert "<img src=http://evil.example/p.png>" in message.get_payload(decode=True).decode()
