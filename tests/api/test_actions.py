"""POST /api/v1/tasks/{id}/actions and bulk actions (contract §6)."""

import json
import threading
import urllib.error
import urllib.request
from datetime import datetime
from urllib.parse import quote

import pytest

from supervisor.core.access.sources import do_create_source
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, Task
from tests.support.factories import make_tasks
from tests.support.previews import AMENDED, amend_latest_result
from tests.support.receiver import Receiver
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario
from tests.support.workers import celery_worker, purge_broker, wait_for

SECRET = "a-test-secret-of-some-length"
SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))
SEED002 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed002" in p.name))
TASK = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
BULK = "/api/v1/actions/bulk"


def bound_source(name: str, url: str, scopes: str = "ingest,read,act"):
    source, token = do_create_source(name, scopes=scopes)
    source.connector = "webhook"
    source.connector_settings = {"url": url, "secret": SECRET, "timeout": 2}
    source.save()
    source.token = token
    return source


def load(source, scenario):
    apply_events(source, scenario["events"])
    until = datetime.fromisoformat(scenario["until"].replace("Z", "+00:00"))
    evaluate(source.namespace_id, until)


def actions_url(task_id: str) -> str:
    return f"/api/v1/tasks/{quote(task_id, safe='')}/actions"


@pytest.fixture
def receiver():
    with Receiver(secret=SECRET) as r:
        yield r


@pytest.fixture
def acting(db, receiver):
    source = bound_source("t3", receiver.url)
    load(source, SEED000)
    return source


def post(client, url, body, token, **headers):
    return client.post(
        url,
        json.dumps(body),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}", **headers},
    )


def test_deliver_is_202_with_the_action_and_twice_is_409(client, acting):
    response = post(
        client, actions_url(TASK), {"kind": "deliver", "reason": "seed 000"}, acting.token
    )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["state"] == "queued" and body["kind"] == "deliver" and body["task"] == TASK
    assert body["actor"] == "source:t3" and body["text"].endswith(
        Action.objects.get().task.child_thread.runs.get(run_id=body["run"]).summary
    )
    again = post(client, actions_url(TASK), {"kind": "deliver"}, acting.token)
    assert again.status_code == 409
    assert "already delivered" in again.json()["error"]
    task = client.get(
        f"/api/v1/tasks/{quote(TASK, safe='')}", headers={"Authorization": f"Bearer {acting.token}"}
    ).json()
    assert [a["id"] for a in task["actions"]] == [body["id"]]


def test_an_idempotency_key_returns_the_first_action(client, acting):
    first = post(
        client, actions_url(TASK), {"kind": "continue"}, acting.token, **{"Idempotency-Key": "abc"}
    )
    second = post(
        client, actions_url(TASK), {"kind": "continue"}, acting.token, **{"Idempotency-Key": "abc"}
    )
    assert first.status_code == second.status_code == 202
    assert first.json()["id"] == second.json()["id"]
    assert Action.objects.count() == 1


def test_an_idempotency_key_used_for_another_action_is_409(client, acting):
    key = {"Idempotency-Key": "abc"}
    first = post(client, actions_url(TASK), {"kind": "continue"}, acting.token, **key)
    assert first.status_code == 202
    again = post(client, actions_url(TASK), {"kind": "cancel"}, acting.token, **key)
    assert again.status_code == 409 and "used for another action" in again.json()["error"]
    assert Action.objects.count() == 1


def test_an_idempotency_key_is_its_namespace_s_alone(client, acting, receiver):
    # Another installation, in a namespace of its own, happens to use the same key.
    other = bound_source("t3-elsewhere", receiver.url)
    load(other, SEED000)
    answers = [
        post(client, actions_url(TASK), {"kind": "continue"}, s.token, **{"Idempotency-Key": "abc"})
        for s in (acting, other, other)
    ]
    assert [a.status_code for a in answers] == [202, 202, 202], answers[1].content
    first, theirs, again = (a.json()["id"] for a in answers)
    assert first != theirs == again  # a fresh request there, then the same one retried
    assert Action.objects.get(pk=theirs).task.namespace_id == other.namespace_id


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"kind": "explode"}, 400, "invalid request"),
        ({"kind": "deliver", "run": "thread:nobody:run:9"}, 400, "not owned"),
        ({}, 400, "invalid request"),
    ],
)
def test_bad_requests_say_what_is_wrong(client, acting, body, status, words):
    response = post(client, actions_url(TASK), body, acting.token)
    assert response.status_code == status
    assert words in json.dumps(response.json())
    assert not Action.objects.exists()


def test_tokens_need_the_act_scope_and_their_own_namespace(client, acting, receiver):
    reader = bound_source("reader", receiver.url, scopes="ingest,read")
    response = post(client, actions_url(TASK), {"kind": "cancel"}, reader.token)
    assert response.status_code == 403 and "act" in response.json()["error"]
    stranger = bound_source("elsewhere", receiver.url)
    response = post(client, actions_url(TASK), {"kind": "cancel"}, stranger.token)
    assert response.status_code == 404
    assert post(client, actions_url(TASK), {"kind": "cancel"}, "sup_wrong").status_code == 401
    assert not Action.objects.exists()


def test_a_task_without_a_connector_is_refused_clearly(client, db):
    source, token = do_create_source("plain", scopes="ingest,read,act")
    load(source, SEED000)
    response = post(client, actions_url(TASK), {"kind": "deliver"}, token)
    assert response.status_code == 409
    assert "connector" in response.json()["error"]


def test_bulk_previews_the_count_then_acts_on_each(client, acting, receiver):
    load(acting, SEED002)
    url = "/api/v1/actions/bulk"
    preview = post(
        client, url, {"kind": "deliver", "filter": {"flag": "stale_result"}}, acting.token
    )
    assert preview.status_code == 200, preview.content
    assert preview.json()["count"] == 1
    assert [t["task"] for t in preview.json()["tasks"]] == [TASK]
    selection = preview.json()["selection"]
    assert not Action.objects.exists()

    confirm = {"kind": "deliver", "filter": {"flag": "stale_result"}, "confirm": True}
    blind = post(client, url, confirm, acting.token)
    assert blind.status_code == 400 and "selection" in blind.json()["error"]
    stale = post(client, url, {**confirm, "selection": selection, "expected": 3}, acting.token)
    assert stale.status_code == 409 and "1 now" in stale.json()["error"]
    # The new preview shows the same task getting the same; it is a preview of its own.
    assert without_digests(stale.json()["preview"]) == without_digests(preview.json())
    assert stale.json()["preview"]["selection"] != selection
    done = post(client, url, {**confirm, "selection": selection, "reason": "bulk"}, acting.token)
    assert done.status_code == 200
    assert [a["task"] for a in done.json()["actions"]] == [TASK]
    # The same confirmation again is the same request: nothing new, the action named.
    again = post(client, url, {**confirm, "selection": selection}, acting.token)
    assert again.json()["actions"] == [] and again.json()["refused"] == []
    assert [a["id"] for a in again.json()["already"]] == [done.json()["actions"][0]["id"]]
    # A new preview's confirmation is another request: a second delivery, refused.
    fresh = post(client, url, {"kind": "deliver", "filter": {"flag": "stale_result"}}, acting.token)
    second = post(client, url, {**confirm, "selection": fresh.json()["selection"]}, acting.token)
    assert second.json()["actions"] == [] and len(second.json()["refused"]) == 1
    everything = post(client, url, {"kind": "cancel", "filter": {}}, acting.token)
    assert everything.status_code == 400
    assert Action.objects.count() == 1


def without_digests(bulk_preview: dict) -> list[dict]:
    """A bulk preview's tasks and what each would get, without its digests (each
    preview has its own id)."""
    return [{k: v for k, v in t.items() if k != "preview"} for t in bulk_preview["tasks"]]


def test_a_preview_answers_what_would_be_sent_and_its_digest(client, acting):
    response = client.get(
        actions_url(TASK) + "/preview",
        {"kind": "deliver"},
        headers={"Authorization": f"Bearer {acting.token}"},
    )
    body = response.json()
    assert response.status_code == 200 and body["allowed"] is True
    assert body["target_thread"] == "thread:parent-release" and body["text"].endswith("merge.")
    confirmed = post(client, actions_url(TASK), {"kind": "deliver", "preview": body["preview"]},
                     acting.token)  # fmt: skip
    assert confirmed.status_code == 202
    assert Action.objects.get().text == body["text"]
    # The child's other finished runs with a result, any of which may be chosen as `run`.
    others = body["other_results"]
    assert others and {r["run"] for r in others} <= {
        f"thread:delegated-task:retry-port:run:{n}" for n in (1, 2, 3, 4)
    }
    assert body["run"] not in {r["run"] for r in others}
    assert all(set(r) == {"run", "ordinal", "owned", "why", "finished_at"} for r in others)
    assert [r["ordinal"] for r in others] == sorted((r["ordinal"] for r in others), reverse=True)


def test_a_request_whose_preview_changed_is_refused_with_the_new_preview(client, acting):
    headers = {"Authorization": f"Bearer {acting.token}"}
    digest = client.get(actions_url(TASK) + "/preview", {"kind": "deliver"}, headers=headers)
    amend_latest_result(acting)
    response = post(
        client, actions_url(TASK), {"kind": "deliver", "preview": digest.json()["preview"]},
        acting.token,
    )  # fmt: skip
    assert response.status_code == 409
    assert "changed since its preview" in response.json()["error"]
    fresh = response.json()["preview"]
    assert fresh["text"].endswith(AMENDED) and fresh["preview"] != digest.json()["preview"]
    assert not Action.objects.exists()


def test_a_bulk_confirm_refuses_other_tasks_of_the_same_count(client, acting):
    url = "/api/v1/actions/bulk"
    make_tasks(acting, 2, prefix="n", title="Nightly")
    filter_ = {"q": "Nightly"}
    preview = post(client, url, {"kind": "cancel", "filter": filter_}, acting.token).json()
    assert preview["count"] == 2
    # One leaves the filter and another comes in: the same count, other tasks.
    Task.objects.filter(task_id="task:n0").update(title="Archived")
    make_tasks(acting, 1, prefix="m", title="Nightly")
    stale = post(
        client, url,
        {"kind": "cancel", "filter": filter_, "confirm": True, "selection": preview["selection"]},
        acting.token,
    )  # fmt: skip
    assert stale.status_code == 409 and "other tasks" in stale.json()["error"]
    assert stale.json()["preview"]["count"] == 2
    assert {t["task"] for t in stale.json()["preview"]["tasks"]} == {"task:n1", "task:m0"}
    assert not Action.objects.exists()


def twenty_at_once(url: str, token: str, key: str | None = None) -> list[tuple[int, dict]]:
    """Twenty deliver requests on their own threads and database connections, released
    at once; their (status, body) answers."""
    start = threading.Barrier(20)
    answers: list[tuple[int, dict]] = []
    lock = threading.Lock()

    def deliver(n: int):
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        if key is not None:
            headers["Idempotency-Key"] = key
        request = urllib.request.Request(
            url,
            data=json.dumps({"kind": "deliver", "reason": f"operator {n}"}).encode(),
            headers=headers,
            method="POST",
        )
        start.wait()
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                answer = (response.status, json.loads(response.read()))
        except urllib.error.HTTPError as exc:
            answer = (exc.code, json.loads(exc.read()))
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=deliver, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    return answers


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_deliveries_give_one_delivery_and_nineteen_refusals(live_server, receiver):
    """Real HTTP requests, released at once: the partial unique constraint lets one
    through; a worker sends it once."""
    purge_broker()
    source = bound_source("t3", receiver.url)
    load(source, SEED000)
    answers = twenty_at_once(live_server.url + actions_url(TASK), source.token)
    statuses = sorted(status for status, _ in answers)
    assert statuses == [202] + [409] * 19, answers
    for status, body in answers:
        if status == 409:
            assert "already" in body["error"] and "deliver" in body["error"]
    assert Action.objects.count() == 1
    with celery_worker():
        wait_for(lambda: Action.objects.get().state == "succeeded", what="the delivery")
    assert len(receiver.deliveries) == 1


@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_requests_with_one_idempotency_key_get_the_same_action(
    live_server, receiver
):
    # The same request retried by a client: each answer is the one action, none a 409.
    purge_broker()
    source = bound_source("t3", receiver.url)
    load(source, SEED000)
    answers = twenty_at_once(live_server.url + actions_url(TASK), source.token, key="retry-1")
    assert sorted(status for status, _ in answers) == [202] * 20, answers
    assert {body["id"] for _, body in answers} == {Action.objects.get().pk}


def test_a_token_with_act_alone_acts_and_is_shown_no_text_nor_task(client, acting):
    # Contract §6: acting needs `act`. What agents wrote (the text each task would get,
    # the tasks a bulk preview matches) needs `read` too: it read both before.
    _, token = do_create_source("actor", namespace=acting.namespace.name, scopes="act")
    latest = acting_text(client, acting)
    preview = client.get(
        actions_url(TASK) + "/preview",
        {"kind": "deliver"},
        headers={"Authorization": f"Bearer {token}"},
    )
    ask = {"kind": "deliver", "filter": {"q": "retry-port"}}
    bulk = post(client, BULK, ask, token)
    for answer in (preview, bulk):
        assert answer.status_code == 200, answer.content
        assert "'read'" in answer.json()["withheld"]
        assert latest not in answer.content.decode()
    assert preview.json()["text"] is None and preview.json()["preview"]
    assert bulk.json()["count"] == 1 and bulk.json()["tasks"] == bulk.json()["sample"] == []
    assert "retry-port" not in bulk.content.decode()

    selection = bulk.json()["selection"]
    done = post(client, BULK, {**ask, "confirm": True, "selection": selection}, token)
    assert done.status_code == 200, done.content
    [action] = done.json()["actions"]
    assert action["text"] is None and action["task"] is None
    assert latest not in done.content.decode() and "retry-port" not in done.content.decode()
    assert Action.objects.get(pk=action["id"]).text == latest  # it acted all the same


def acting_text(client, acting) -> str:
    """The text a delivery of TASK would send, as a token that may read is shown it."""
    return client.get(
        actions_url(TASK) + "/preview",
        {"kind": "deliver"},
        headers={"Authorization": f"Bearer {acting.token}"},
    ).json()["text"]


def test_the_bulk_preview_shows_the_exact_text_each_task_would_get(client, acting):
    preview = post(client, BULK, {"kind": "deliver", "filter": {"q": "retry-port"}}, acting.token)
    [task] = preview.json()["tasks"]
    single = client.get(
        actions_url(TASK) + "/preview",
        {"kind": "deliver"},
        headers={"Authorization": f"Bearer {acting.token}"},
    ).json()
    assert task["task"] == TASK and task["allowed"] is True
    assert task["text"] == single["text"] and task["text"].endswith("merge.")
    assert task["target_thread"] == single["target_thread"] and task["run"] == single["run"]


def test_a_bulk_confirm_whose_text_changed_since_the_preview_is_refused(client, acting):
    ask = {"kind": "deliver", "filter": {"q": "retry-port"}}
    preview = post(client, BULK, ask, acting.token).json()
    amend_latest_result(acting)  # the same task, another text
    stale = post(
        client, BULK, {**ask, "confirm": True, "selection": preview["selection"]}, acting.token
    )
    assert stale.status_code == 409, stale.content
    error = stale.json()["error"]
    assert "changed since the preview" in error and f"{TASK}: its text" in error
    [fresh] = stale.json()["preview"]["tasks"]
    assert fresh["text"].endswith(AMENDED)
    assert not Action.objects.exists()
    # Confirming the new preview sends the new text, the one it showed.
    done = post(
        client,
        BULK,
        {**ask, "confirm": True, "selection": stale.json()["preview"]["selection"]},
        acting.token,
    )
    assert done.status_code == 200 and Action.objects.get().text == fresh["text"]


@pytest.mark.parametrize(
    ("url", "body"),
    [
        (actions_url(TASK), {"kind": "continue"}),
        (BULK, {"kind": "continue", "filter": {"q": "retry-port"}}),
        (BULK, {"kind": "continue", "filter": {"q": "retry-port"}, "confirm": True,
                "selection": "anything"}),
    ],
)  # fmt: skip
def test_an_empty_idempotency_key_is_400_naming_the_header(client, acting, url, body):
    # The contract: 1 to 200 printable characters, else 400; empty is not "no key".
    response = post(client, url, body, acting.token, **{"Idempotency-Key": ""})
    assert response.status_code == 400, response.content
    assert "Idempotency-Key must be 1 to 200 characters" in response.json()["error"]
    assert not Action.objects.exists()
