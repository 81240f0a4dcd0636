"""A dead letter whose event held a lone surrogate (a JSON `\\ud800` escape, no Unicode
text, rejected at ingest) opens on the admin pages with the escape shown as it was
sent, and its fix-and-replay form works: fixed, it is taken; unchanged, it is refused
saying why."""

import html
import json
import re

import pytest

from supervisor.core.models import DeadLetter, IngestedEvent
from tests.support.cast import ADMIN, login_as

pytestmark = pytest.mark.django_db

# As a client writes it on the wire: the escapes are JSON's, not Python's.
SENT = (
    '{"events": [{"id": "e\\ud800", "type": "run.started", "at": "2026-11-05T22:40:00Z", '
    '"data": {"thread": "t\\udfff", "run": "r"}}]}'
)
BODY_FIELD = re.compile(r'<textarea name="body"[^>]*>(.*?)</textarea>', re.S)


@pytest.fixture
def letter(client, source):
    answer = client.post(
        "/api/v1/events",
        SENT,
        content_type="application/json",
        headers={"Authorization": f"Bearer {source.token}"},
    )
    assert answer.status_code == 200 and answer.json()["rejected"], answer.content
    login_as(client, ADMIN)
    return DeadLetter.objects.get()


def replay_field(page) -> str:
    return html.unescape(BODY_FIELD.search(page.content.decode()).group(1))


def test_the_list_shows_the_letter_with_the_escape(client, letter):
    page = client.get("/admin/dead-letters/")
    assert page.status_code == 200
    assert "<code>e\\ud800</code>" in page.content.decode()


def test_the_letter_shows_its_body_with_the_escapes_visible(client, letter):
    page = client.get(f"/admin/dead-letters/{letter.pk}/")
    assert page.status_code == 200
    text = html.unescape(page.content.decode())
    assert '"id": "e\\ud800"' in text and '"thread": "t\\udfff"' in text
    assert "data.thread: contains a lone surrogate U+DFFF" in text
    # What the form offers reads back as exactly the event that was sent.
    assert json.loads(replay_field(page)) == json.loads(SENT)["events"][0]


def test_the_fixed_body_is_replayed_from_the_form(client, letter):
    offered = replay_field(client.get(f"/admin/dead-letters/{letter.pk}/"))
    fixed = offered.replace("e\\ud800", "e1").replace("t\\udfff", "t")
    answer = client.post(f"/admin/dead-letters/{letter.pk}/replay/", {"body": fixed})
    assert answer.status_code == 302
    assert IngestedEvent.objects.filter(event_id="e1").exists()
    letter.refresh_from_db()
    assert letter.replayed_at is not None and letter.replay_error is None


def test_the_body_replayed_unchanged_is_refused_saying_why(client, letter):
    offered = replay_field(client.get(f"/admin/dead-letters/{letter.pk}/"))
    page = client.post(f"/admin/dead-letters/{letter.pk}/replay/", {"body": offered})
    assert page.status_code == 200
    assert "Not replayed: event 1 (e\\ud800): data.thread: contains a lone surrogate U+DFFF" in (
        html.unescape(page.content.decode())
    )
    assert DeadLetter.objects.count() == 1 and not IngestedEvent.objects.exists()
    letter.refresh_from_db()
    assert letter.replayed_at is None and "U+DFFF" in letter.replay_error


def test_an_id_of_lone_surrogates_fits_the_letters_event_id_column(client, source):
    """Escaped, 40 surrogates are 240 characters: PostgreSQL's varchar(200) would refuse
    the whole batch (SQLite does not check the length)."""
    sent = '{"events": [{"id": "' + "\\ud800" * 40 + '", "type": "run.started"}]}'
    answer = client.post(
        "/api/v1/events",
        sent,
        content_type="application/json",
        headers={"Authorization": f"Bearer {source.token}"},
    )
    assert answer.status_code == 200
    event_id = DeadLetter.objects.get().event_id
    assert event_id == "\\ud800" * 33 and answer.json()["rejected"][0]["id"] == event_id
