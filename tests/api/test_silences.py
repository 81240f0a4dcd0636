"""GET /api/v1/silences: active silences with how many open flags each holds, then the
ended ones; a token sees its own namespace's counts and sources only."""

from datetime import timedelta

import pytest

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.triage.silences import do_create_silence, do_end_silence
from tests.support.factories import make_tasks

pytestmark = pytest.mark.django_db


def get(client, path, token=None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return client.get(path, **headers)


@pytest.fixture
def two_namespaces(source):
    other, token = do_create_source("other", scopes="read")
    other.token = token
    now = clock.now()
    for src in (source, other):
        make_tasks(src, 2)
        for n in range(2):
            do_open_flag(src.namespace_id, Finding("stuck", "task", f"task:t{n}"), now)
    return source, other


def make(now, **matchers):
    return do_create_silence(**matchers, reason="why", ends_at=now + timedelta(hours=1), now=now)


def test_a_session_lists_active_then_ended_with_what_each_holds(client, user, two_namespaces):
    now = clock.now()
    every = make(now, kinds=["stuck"])
    one = make(now, title_words=["task", "1"])
    ended = make(now, kinds=["stale_result"])
    do_end_silence(ended, now)
    client.force_login(user)
    items = get(client, "/api/v1/silences").json()["items"]
    assert [i["id"] for i in items] == [every.pk, one.pk, ended.pk]
    assert [i["holds_open_flags"] for i in items] == [4, 2, None]
    assert [i["active"] for i in items] == [True, True, False]
    assert items[0]["matchers"]["kinds"] == ["stuck"] and items[2]["ended_early_at"]
    only_ended = get(client, "/api/v1/silences?state=ended").json()["items"]
    assert [i["id"] for i in only_ended] == [ended.pk]


def test_a_token_sees_its_namespace_only(client, two_namespaces):
    source, other = two_namespaces
    now = clock.now()
    make(now, kinds=["stuck"])
    mine = make(now, sources=["other"])
    make(now, sources=[source.name])  # another namespace's source only: not listed
    both = make(now, sources=[source.name, "other"])
    items = get(client, "/api/v1/silences", other.token).json()["items"]
    assert [i["holds_open_flags"] for i in items] == [2, 2, 2]
    by_id = {i["id"]: i for i in items}
    assert by_id[mine.pk]["matchers"]["sources"] == ["other"]
    assert by_id[both.pk]["matchers"]["sources"] == ["other"]


def test_a_bad_state_is_a_400_saying_why(client, user):
    client.force_login(user)
    response = get(client, "/api/v1/silences?state=soon")
    assert response.status_code == 400 and "active" in response.json()["error"]
