"""What the connector's T3 token may do and until when: the connection check asks T3
(`GET /api/auth/session`) and fails when the token may not act; the source page reads
the token's own expiry and warns a week before it runs out."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from supervisor.connectors.t3code import session
from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.contract.connectors import ConnectorError
from supervisor.core.models import Source
from tests.support.cast import ADMIN, login_as
from tests.support.t3.connector import TOKEN, t3code
from tests.support.t3.fake_server import FakeT3

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def t3_token(expires: datetime | None, scopes=("orchestration:read", "orchestration:operate")):
    """A token shaped as T3 issues it: base64url JSON claims, a dot, a signature."""
    claims = {"v": 1, "kind": "session", "sid": "s-1", "sub": "cli-issued-session"}
    claims |= {"scopes": list(scopes), "method": "bearer-access-token", "iat": 0}
    if expires is not None:
        claims["exp"] = int(expires.timestamp() * 1000)
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{payload}.c2lnbmF0dXJl"


@pytest.fixture
def fake():
    with FakeT3(token=TOKEN) as server:
        yield server


def test_the_check_says_the_token_may_act_and_until_when(fake):
    answer = t3code(fake.url).check_connection(timeout=5)

    assert answer.endswith(
        "; T3 says it may act (orchestration:operate) until 2027-01-01 00:00 UTC, when the "
        "token expires"
    ), answer
    # It asked over HTTP, with the token, acting on nothing.
    assert fake.calls == []


def test_the_check_fails_for_a_token_that_may_only_read(fake):
    fake.session_scopes = ["orchestration:read"]

    with pytest.raises(ConnectorError) as raised:
        t3code(fake.url).check_connection(timeout=5)

    assert "may not act (its scopes: orchestration:read)" in str(raised.value)
    assert "orchestration:operate" in str(raised.value)
    assert not raised.value.retryable


def test_the_check_says_when_a_build_cannot_tell_what_the_token_may_do(fake):
    fake.session_scopes = None  # an older build: no session endpoint

    answer = t3code(fake.url).check_connection(timeout=5)

    assert "does not say what a token may do" in answer
    assert "T3 says it may act" not in answer


def test_the_check_fails_when_t3_says_the_token_is_not_authenticated(fake):
    # The session endpoint is T3's word: a token it calls unauthenticated (revoked since,
    # say) is not one to act with, whatever the upgrade said a moment before.
    fake.session_accepts = False

    with pytest.raises(ConnectorError, match="T3 does not accept the token") as raised:
        t3code(fake.url).check_connection(timeout=5)
    assert not raised.value.retryable


def test_the_claims_are_read_from_a_token_shaped_as_t3s():
    expires = datetime(2026, 12, 31, 9, 30, tzinfo=UTC)
    grant = session.read_claims(t3_token(expires))

    assert grant == session.Grant(("orchestration:read", "orchestration:operate"), expires)
    assert grant.may_act
    assert session.read_claims(t3_token(None)).expires_at is None


@pytest.mark.parametrize(
    "token",
    [
        "t3-test-token",  # no dot
        ".sig",
        "bm90IGpzb24.sig",  # "not json"
        base64.urlsafe_b64encode(b'{"kind": "websocket"}').decode() + ".sig",
        base64.urlsafe_b64encode(b"[1, 2]").decode() + ".sig",
        "%%%.sig",
    ],
)
def test_a_token_not_shaped_as_t3s_states_nothing(token):
    assert session.read_claims(token) is None


def test_the_session_endpoint_sits_beside_the_websocket():
    assert session.session_url("ws://127.0.0.1:3773/ws") == "http://127.0.0.1:3773/api/auth/session"
    assert session.session_url("wss://t3.example:8443/ws?x=1") == (
        "https://t3.example:8443/api/auth/session"
    )
    # Behind a proxy under a path: the endpoint sits under the same prefix.
    assert session.session_url("wss://tools.example/t3/ws") == (
        "https://tools.example/t3/api/auth/session"
    )


# --- the source page ----------------------------------------------------------------


def source_with_token(token: str) -> Source:
    source, _ = do_create_source("t3-grant", scopes="ingest,read,act")
    Source.objects.filter(pk=source.pk).update(
        connector="t3code", connector_settings={"url": "ws://127.0.0.1:9/ws", "token": token}
    )
    return Source.objects.get(pk=source.pk)


def source_page(client, source: Source) -> str:
    login_as(client, ADMIN)
    with clock.virtual_clock(NOW):
        response = client.get(reverse("web:admin-source", args=[source.pk]))
    assert response.status_code == 200
    return response.content.decode()


def expiry_paragraph(page: str) -> str:
    start = page.index('id="token-expiry"')
    return page[page.rindex("<p", 0, start) : page.index("</p>", start)]


@pytest.mark.django_db
def test_the_source_page_says_when_the_token_expires(client):
    page = source_page(client, source_with_token(t3_token(NOW + timedelta(days=29, hours=1))))

    paragraph = expiry_paragraph(page)
    assert "expires" in paragraph and "2026-12-31 13:00 UTC" in paragraph
    assert "(in 29 days)" in paragraph
    assert "warn" not in paragraph


@pytest.mark.django_db
def test_the_source_page_warns_a_week_before_the_token_expires(client):
    page = source_page(client, source_with_token(t3_token(NOW + timedelta(days=2, hours=3))))

    paragraph = expiry_paragraph(page)
    assert 'class="token-expiry warn"' in paragraph
    assert "expires in 2 days" in paragraph
    assert "every action for this source will fail" in paragraph


@pytest.mark.django_db
def test_the_source_page_says_an_expired_token_stops_every_action(client):
    page = source_page(client, source_with_token(t3_token(NOW - timedelta(minutes=5))))

    paragraph = expiry_paragraph(page)
    assert 'class="token-expiry warn"' in paragraph
    assert "token expired" in paragraph and "fails until a new token is saved" in paragraph


@pytest.mark.django_db
def test_a_token_that_states_no_expiry_gets_no_line(client):
    page = source_page(client, source_with_token("opaque-token"))

    assert 'id="token-expiry"' not in page
