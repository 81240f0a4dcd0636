"""Source tokens: stored as a hash and a prefix, found in constant time, scoped per
endpoint, revocable and rotatable with immediate effect."""

import hashlib
import hmac
import json

import pytest
from django.test import Client

from supervisor.core.access import sources
from supervisor.core.access.sources import do_create_source, do_revoke_source, do_rotate_token
from supervisor.core.models import Source

pytestmark = pytest.mark.django_db

# One endpoint per scope: (method, url, body).
ENDPOINTS = {
    "ingest": ("POST", "/api/v1/events", {"events": []}),
    "read": ("GET", "/api/v1/tasks", None),
    "act": ("POST", "/api/v1/actions/bulk", {"kind": "continue", "filter": {"q": "none"}}),
    "metrics": ("GET", "/metrics", None),
}


def call(token: str, scope: str) -> int:
    method, url, body = ENDPOINTS[scope]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    if method == "GET":
        return client.get(url).status_code
    return client.post(url, json.dumps(body), content_type="application/json").status_code


def test_the_row_holds_a_hash_and_a_prefix_never_the_token():
    source, token = do_create_source("hashed", scopes="read")
    row = Source.objects.filter(pk=source.pk).values().get()
    assert row["token_hash"] == hashlib.sha256(token.encode()).hexdigest()
    assert row["token_prefix"] == token[:12] and len(token) > 40
    assert not any(token in str(value) for value in row.values())


def test_the_lookup_compares_in_constant_time(monkeypatch):
    source, token = do_create_source("timed", scopes="read")
    calls, compare = [], hmac.compare_digest

    def recording(a, b):
        calls.append((a, b))
        return compare(a, b)

    monkeypatch.setattr(sources.hmac, "compare_digest", recording)
    assert sources.source_for_token(token).pk == source.pk
    assert calls == [(source.token_hash, source.token_hash)]
    assert call(token, "read") == 200
    assert len(calls) == 2  # the API goes through the same lookup


@pytest.mark.parametrize("scope", list(ENDPOINTS))
def test_each_endpoint_needs_its_scope(scope):
    # Acting needs `read` too (every operation and scope: test_scopes.py).
    needed = "read,act" if scope == "act" else scope
    _, with_it = do_create_source(f"with-{scope}", namespace="ns", scopes=needed)
    others = ",".join(s for s in ENDPOINTS if s != scope)
    _, without = do_create_source(f"without-{scope}", namespace="ns", scopes=others)
    assert call(with_it, scope) == 200
    assert call(without, scope) == 403
    assert call("sup_" + "x" * 43, scope) == 401
    assert call(with_it[:-1], scope) == 401  # almost the token is not the token


@pytest.mark.parametrize("scope", list(ENDPOINTS))
def test_a_revoked_token_is_401_at_once(scope):
    source, token = do_create_source("revoked", scopes=",".join(ENDPOINTS))
    assert call(token, scope) == 200
    do_revoke_source(source)
    assert call(token, scope) == 401


def test_rotating_stops_the_old_token_and_starts_the_new():
    source, old = do_create_source("rotated", scopes=",".join(ENDPOINTS))
    do_revoke_source(source)
    new = do_rotate_token(source)
    for scope in ENDPOINTS:
        assert (call(old, scope), call(new, scope)) == (401, 200)
    row = Source.objects.get(pk=source.pk)
    assert row.token_prefix == new[:12] and row.token_hash != Source.hash_token(old)
