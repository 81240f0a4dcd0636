"""POST /api/v1/events, contract §1."""

import json

import pytest

from supervisor.core.access.sources import do_create_source
from supervisor.core.models import DeadLetter, IngestedEvent, Run, Task, TaskReport
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

URL = "/api/v1/events"


def post(client, token, body, content_type="application/json"):
    if not isinstance(body, (str, bytes)):
        body = json.dumps(body)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.post(URL, body, content_type=content_type, headers=headers)


def delegated(event_id="e1", task="task:1", **data):
    return {
        "id": event_id,
        "type": "task.delegated",
        "at": "2026-11-05T22:40:00Z",
        "data": {
            "task": task,
            "parent_thread": "thread:p",
            "child_thread": "thread:c",
            "title": "Port",
            "mode": "async",
            **data,
        },
    }


def finished(event_id="f1", run="run:1", summary="done", status="completed"):
    return {
        "id": event_id,
        "type": "run.finished",
        "at": "2026-11-05T22:45:00Z",
        "data": {"thread": "thread:c", "run": run, "status": status, "summary": summary},
    }


@pytest.mark.django_db
def test_a_valid_batch_is_accepted_and_stored(client, source):
    response = post(client, source.token, {"events": [delegated(), finished()]})
    assert response.status_code == 200
    assert response.json() == {"accepted": 2, "duplicates": 0, "rejected": []}
    assert IngestedEvent.objects.filter(source=source).count() == 2
    assert Task.objects.get(task_id="task:1").title == "Port"
    assert Run.objects.get(run_id="run:1").summary == "done"


@pytest.mark.django_db
def test_a_scenario_file_is_accepted_as_it_is(client, source):
    scenario = load_scenario(CONTRACT_SCENARIOS[0])
    response = post(client, source.token, scenario)
    assert response.status_code == 200
    assert response.json()["accepted"] == len(scenario["events"])


@pytest.mark.django_db
def test_a_resent_id_is_a_duplicate_even_with_other_content(client, source):
    post(client, source.token, {"events": [finished(summary="first")]})
    response = post(client, source.token, {"events": [finished(summary="second")]})
    assert response.json() == {"accepted": 0, "duplicates": 1, "rejected": []}
    assert Run.objects.get(run_id="run:1").summary == "first"
    assert IngestedEvent.objects.count() == 1


@pytest.mark.django_db
def test_an_id_repeated_inside_one_batch_counts_once(client, source):
    response = post(
        client, source.token, {"events": [finished(summary="a"), finished(summary="b")]}
    )
    assert response.json() == {"accepted": 1, "duplicates": 1, "rejected": []}
    assert Run.objects.get(run_id="run:1").summary == "a"


@pytest.mark.django_db
def test_valid_events_are_kept_when_others_are_rejected(client, source):
    bad = {**finished("f2"), "type": "run.exploded"}
    response = post(client, source.token, {"events": [delegated(), bad, finished()]})
    body = response.json()
    assert response.status_code == 200
    assert body["accepted"] == 2
    assert body["rejected"] == [{"index": 1, "id": "f2", "error": body["rejected"][0]["error"]}]
    assert "unknown event type 'run.exploded'" in body["rejected"][0]["error"]
    letter = DeadLetter.objects.get()
    assert letter.event_id == "f2" and json.loads(letter.body)["type"] == "run.exploded"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({**finished(), "type": "run.exploded"}, "unknown event type"),
        ({k: v for k, v in finished().items() if k != "at"}, "at: Field required"),
        (
            {**finished(), "data": {"thread": "t", "run": "r", "status": "completed"}},
            "data.summary: Field required",
        ),
        (
            {**finished(), "data": {**finished()["data"], "status": "exploded"}},
            "data.status: Input should be",
        ),
        ({**finished(), "at": "yesterday"}, "at: must be an RFC 3339 timestamp"),
        ({**finished(), "at": "2026-11-05T22:40:00"}, "at: must be an RFC 3339 timestamp"),
        (
            {**delegated(), "data": {**delegated()["data"], "mode": "later"}},
            "data.mode: Input should be 'async' or 'wait'",
        ),
        ({**finished(), "id": ""}, "id: String should have at least 1 character"),
    ],
    ids=[
        "unknown-type",
        "missing-at",
        "missing-summary",
        "bad-run-status",
        "bad-time",
        "time-without-offset",
        "bad-mode",
        "empty-id",
    ],
)
def test_a_broken_event_is_rejected_with_a_reason_and_kept(client, source, event, message):
    response = post(client, source.token, {"events": [event]})
    body = response.json()
    assert response.status_code == 200
    assert body["accepted"] == 0
    assert message in body["rejected"][0]["error"]
    assert DeadLetter.objects.filter(error=body["rejected"][0]["error"]).count() == 1


@pytest.mark.django_db
def test_unknown_fields_inside_data_are_ignored(client, source):
    event = finished()
    event["data"]["colour"] = "blue"
    assert post(client, source.token, {"events": [event]}).json()["accepted"] == 1


@pytest.mark.django_db
def test_unknown_top_level_keys_are_ignored(client, source):
    response = post(client, source.token, {"events": [finished()], "name": "x", "expect": {}})
    assert response.json()["accepted"] == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"evnts": []}', "no 'events' key"),
        ('{"events": {}}', "'events' must be a list"),
        (b"\xff\xfe", "not UTF-8"),
    ],
    ids=["malformed", "array", "no-events", "events-not-list", "not-utf8"],
)
def test_an_unreadable_body_is_400_with_a_json_error(client, source, body, message):
    response = post(client, source.token, body)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert IngestedEvent.objects.count() == 0


@pytest.mark.django_db
def test_ndjson_with_a_bad_line_rejects_that_line_only(client, source):
    body = "\n".join([json.dumps(delegated()), "{oops", "", json.dumps(finished()), "[1]"])
    response = post(client, source.token, body, "application/x-ndjson")
    result = response.json()
    assert response.status_code == 200
    assert result["accepted"] == 2
    assert [(r["index"], r["id"]) for r in result["rejected"]] == [(1, None), (3, None)]
    assert "line 2 is not valid JSON" in result["rejected"][0]["error"]
    assert "line 5 is not a JSON object" in result["rejected"][1]["error"]
    assert set(DeadLetter.objects.values_list("body", flat=True)) == {"{oops", "[1]"}


@pytest.mark.django_db
def test_another_content_type_is_415(client, source):
    response = post(client, source.token, "events", "text/plain")
    assert response.status_code == 415
    assert "text/plain" in response.json()["error"]


@pytest.mark.django_db
def test_more_than_1000_events_is_413(client, source):
    events = [finished(f"f{i}", run=f"run:{i}") for i in range(1001)]
    response = post(client, source.token, {"events": events})
    assert response.status_code == 413
    assert "at most 1000" in response.json()["error"]
    assert IngestedEvent.objects.count() == 0


@pytest.mark.django_db
def test_exactly_1000_events_are_accepted(client, source):
    events = [finished(f"f{i}", run=f"run:{i}") for i in range(1000)]
    assert post(client, source.token, {"events": events}).json()["accepted"] == 1000


@pytest.mark.django_db
@pytest.mark.parametrize("size", [1024 * 1024 + 1, 3 * 1024 * 1024], ids=["just-over", "far-over"])
def test_a_body_over_1_mib_is_413(client, source, size):
    body = json.dumps({"events": [finished(summary="x" * size)]})
    response = post(client, source.token, body)
    assert response.status_code == 413
    assert "1 MiB" in response.json()["error"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "header",
    [None, "Bearer sup_not-a-real-token", "Basic dXNlcjpwdw==", "Bearer "],
    ids=["missing", "invalid", "not-bearer", "empty"],
)
def test_a_missing_or_invalid_token_is_401(client, source, header):
    headers = {"Authorization": header} if header else {}
    response = client.post(
        URL, json.dumps({"events": []}), content_type="application/json", headers=headers
    )
    assert response.status_code == 401
    assert "bearer token" in response.json()["error"]


@pytest.mark.django_db
def test_a_token_without_the_ingest_scope_is_403(client):
    _, token = do_create_source("reader", scopes="read")
    response = post(client, token, {"events": [finished()]})
    assert response.status_code == 403
    assert "ingest" in response.json()["error"]
    assert IngestedEvent.objects.count() == 0


@pytest.mark.django_db
def test_a_revoked_token_is_401(client, source):
    from django.utils import timezone

    type(source).objects.filter(pk=source.pk).update(revoked_at=timezone.now())
    assert post(client, source.token, {"events": [finished()]}).status_code == 401


@pytest.mark.django_db
def test_two_sources_of_one_namespace_describe_one_task(client):
    _, origin = do_create_source("origin", namespace="install")
    _, remote = do_create_source("remote", namespace="install")
    post(client, origin, {"events": [delegated()]})
    report = {
        "id": "r1",
        "type": "task.reported",
        "at": "2026-11-05T22:50:00Z",
        "data": {"task": "task:1", "status": "completed", "summary": "done"},
    }
    # The remote follower's ids may collide with the origin's: ids are per source.
    post(client, remote, {"events": [{**report, "id": "e1"}]})
    task = Task.objects.get()
    assert task.known and task.title == "Port"
    assert task.status == "completed"
    assert TaskReport.objects.filter(task=task).count() == 1
    assert IngestedEvent.objects.count() == 2


@pytest.mark.django_db
def test_the_same_task_id_in_two_namespaces_is_two_tasks(client):
    _, one = do_create_source("one")
    _, two = do_create_source("two")
    post(client, one, {"events": [delegated()]})
    post(client, two, {"events": [delegated()]})
    assert Task.objects.filter(task_id="task:1").count() == 2


def test_a_delegation_may_leave_the_mode_out(client, source):
    """A compatible extension of contract §3: T3 stores no mode, its follower sends none."""
    event = delegated()
    del event["data"]["mode"]
    response = post(client, source.token, {"events": [event]})
    assert response.json() == {"accepted": 1, "duplicates": 0, "rejected": []}
    assert Task.objects.get(task_id="task:1").mode is None


def requested(event_id="q1", **data):
    return {
        "id": event_id,
        "type": "task.requested",
        "at": "2026-11-05T22:39:59Z",
        "data": {"parent_thread": "thread:p", "client_request_id": "req-1", **data},
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"client_request_id": None}, "data.client_request_id: Input should be a valid string"),
        ({"client_request_id": ""}, "data.client_request_id: String should have at least 1"),
        ({"client_request_id": "r" * 501}, "data.client_request_id: String should have at most"),
        ({"parent_thread": 7}, "data.parent_thread: Input should be a valid string"),
        ({"parent_run": ""}, "data.parent_run: String should have at least 1"),
        ({"title": ["a"]}, "data.title: Input should be a valid string"),
    ],
    ids=[
        "no-request-id",
        "empty-request-id",
        "long-request-id",
        "bad-parent",
        "empty-run",
        "bad-title",
    ],
)
def test_a_broken_task_request_is_rejected_naming_its_field(client, source, data, message):
    # task.requested is validated as the other types are.
    body = post(client, source.token, {"events": [requested(**data)]}).json()
    assert body["accepted"] == 0
    assert message in body["rejected"][0]["error"], body


@pytest.mark.django_db
def test_a_task_request_is_kept_once_whatever_is_sent_again(client, source):
    from supervisor.core.models import TaskRequest

    event = requested(parent_run="run:p1", title="Port")
    assert post(client, source.token, {"events": [event, event]}).json()["accepted"] == 1
    assert post(client, source.token, {"events": [event]}).json()["duplicates"] == 1
    (row,) = TaskRequest.objects.all()
    assert (row.parent_thread.thread_id, row.client_request_id) == ("thread:p", "req-1")
    assert (row.parent_run, row.title, row.event_id) == ("run:p1", "Port", "q1")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "accepted"),
    [("usage_limit", 1), ("a_class_of_a_newer_build", 1), ("", 0), ("x" * 41, 0), (7, 0)],
)
def test_failure_class_is_an_optional_name_kept_as_sent(client, source, value, accepted):
    """A compatible extension: any short name is taken, as sent."""
    event = finished(status="failed")
    event["data"]["failure_class"] = value
    assert post(client, source.token, {"events": [event]}).json()["accepted"] == accepted
    if accepted:
        assert Run.objects.get(run_id="run:1").failure_class == value
