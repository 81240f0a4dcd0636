"""A token reads and acts only in its own namespace: another namespace's tasks, prompts,
results and flags are not there for it (404, or absent from lists). A session sees all."""

import json
from datetime import timedelta

import pytest

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag
from tests.support.factories import make_tasks
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db

SEED004 = next(p for p in CONTRACT_SCENARIOS if "seed004" in p.name)


@pytest.fixture
def theirs(db):
    """Another installation: its tasks, with a secret prompt, and an open flag."""
    source, _ = do_create_source("theirs", scopes="ingest,read,act")
    make_tasks(source, 2, prefix="secret")
    apply_events(source, load_scenario(SEED004)["events"])
    evaluate(source.namespace_id, clock.now())
    return source


@pytest.fixture
def mine(db):
    source, token = do_create_source("mine", scopes="ingest,read,act")
    make_tasks(source, 1, prefix="own")
    return token


def get(client, url, token, **query):
    return client.get(url, query, headers={"Authorization": f"Bearer {token}"})


def post(client, url, token, body):
    return client.post(
        url, json.dumps(body), content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )  # fmt: skip


def test_a_read_token_lists_only_its_namespaces_tasks(client, theirs, mine):
    items = get(client, "/api/v1/tasks", mine).json()["items"]
    assert [t["id"] for t in items] == ["task:own0"]
    assert get(client, "/api/v1/tasks", mine, q="secret").json()["items"] == []


def test_a_read_token_asking_for_another_namespace_gets_404(client, theirs, mine):
    response = get(client, "/api/v1/tasks", mine, namespace="theirs")
    assert response.status_code == 404
    assert "only in namespace 'mine'" in response.json()["error"]
    assert get(client, "/api/v1/flags", mine, namespace="theirs").status_code == 404


def test_another_namespaces_task_its_prompt_and_result_are_not_there(client, theirs, mine):
    for query in ({}, {"namespace": "theirs"}):
        response = get(client, "/api/v1/tasks/task%3Asecret0", mine, **query)
        assert response.status_code == 404
        assert "prompt" not in response.json()


def test_a_read_token_lists_no_flag_of_another_namespace(client, theirs, mine):
    assert Flag.objects.filter(namespace=theirs.namespace, state="open").exists()
    assert get(client, "/api/v1/flags", mine).json()["items"] == []
    assert get(client, "/api/v1/flags", mine, state="open").json()["items"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"action": "acknowledge"},
        {"action": "snooze", "until": "9999-12-31T23:00:00Z"},
        {"action": "resolve", "reason": "not mine to close"},
    ],
    ids=lambda body: body["action"],
)
def test_an_act_token_cannot_touch_a_flag_of_another_namespace(client, theirs, mine, body):
    flag = Flag.objects.get(namespace=theirs.namespace, kind="delegation_rejected")
    response = post(client, f"/api/v1/flags/{flag.pk}", mine, body)
    assert response.status_code == 404
    assert response.json()["error"] == f"no flag {flag.pk} in namespace 'mine'"
    flag.refresh_from_db()
    assert (flag.state, flag.acknowledged_at, flag.snoozed_until) == ("open", None, None)


def test_an_act_token_acts_on_its_own_namespaces_flag(client, theirs):
    token = do_create_source("theirs-too", namespace="theirs", scopes="read,act")[1]
    flag = Flag.objects.get(namespace=theirs.namespace, kind="delegation_rejected")
    until = (clock.now() + timedelta(hours=1)).isoformat()
    response = post(client, f"/api/v1/flags/{flag.pk}", token, {"action": "snooze", "until": until})
    assert response.status_code == 200


def test_a_session_reads_every_namespace(client, user, theirs, mine):
    client.force_login(user)
    ids = {t["id"] for t in client.get("/api/v1/tasks").json()["items"]}
    assert {"task:own0", "task:secret0", "task:secret1"} <= ids
    assert client.get("/api/v1/flags").json()["items"]
