"""The read API of contract §6."""

from urllib.parse import quote

import pytest
from django.contrib.auth.models import Permission

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Task
from supervisor.core.triage.assignment import do_assign_task
from tests.support.factories import make_tasks
from tests.support.scenarios import CONTRACT_SCENARIOS, OWN_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db


def get(client, path, token):
    return client.get(path, headers={"Authorization": f"Bearer {token}"})


def test_reading_needs_a_token_or_a_session(client, source):
    assert client.get("/api/v1/tasks").status_code == 401


def test_a_token_without_read_scope_is_403(client):
    _, token = do_create_source("ingest-only", scopes="ingest")
    assert get(client, "/api/v1/tasks", token).status_code == 403


def test_a_logged_in_operator_reads_with_the_session(client, user, source):
    make_tasks(source, 1)
    client.force_login(user)
    assert [t["id"] for t in client.get("/api/v1/tasks").json()["items"]] == ["task:t0"]


def test_tasks_come_newest_first_in_keyset_pages(client, source):
    make_tasks(source, 5)
    first = get(client, "/api/v1/tasks?limit=2", source.token).json()
    assert [t["id"] for t in first["items"]] == ["task:t4", "task:t3"]
    second = get(client, f"/api/v1/tasks?limit=2&cursor={first['next']}", source.token).json()
    assert [t["id"] for t in second["items"]] == ["task:t2", "task:t1"]
    last = get(client, f"/api/v1/tasks?limit=2&cursor={second['next']}", source.token).json()
    assert [t["id"] for t in last["items"]] == ["task:t0"]
    assert last["next"] is None


def test_a_forged_cursor_is_400(client, source):
    response = get(client, "/api/v1/tasks?cursor=not-ours", source.token)
    assert response.status_code == 400
    assert "cursor" in response.json()["error"]


def test_tasks_filter_by_status_and_search(client, source):
    make_tasks(source, 3)
    apply_events(
        source,
        [
            {
                "id": "x",
                "type": "task.reported",
                "at": "2026-11-06T00:00:00Z",
                "data": {"task": "task:t1", "status": "failed"},
            }
        ],
    )
    failed = get(client, "/api/v1/tasks?status=failed", source.token).json()["items"]
    assert [t["id"] for t in failed] == ["task:t1"]
    found = get(client, "/api/v1/tasks?q=TASK 2", source.token).json()["items"]
    assert [t["id"] for t in found] == ["task:t2"]


def replayed(source, name):
    scenario = load_scenario(next(p for p in CONTRACT_SCENARIOS if name in p.name))
    apply_events(source, scenario["events"])
    with clock.virtual_clock(clock.now()):
        evaluate(source.namespace_id, clock.now())
    return scenario


def test_task_detail_says_what_reached_the_parent_as_the_flags_do(client, source):
    # One reading for the page, the API and the flags. The orchestrator hands
    # results by wake only, and none was delivered: its report's text did not reach.
    scenario = load_scenario(next(p for p in OWN_SCENARIOS if p.stem == "never-delivered"))
    apply_events(source, scenario["events"])
    with clock.virtual_clock(clock.now()):
        evaluate(source.namespace_id, clock.now())
    body = get(client, f"/api/v1/tasks/{quote('task:nd', safe='')}", source.token).json()
    assert {f["kind"] for f in body["flags"] if f["state"] == "open"} == {"never_delivered"}
    assert body["latest_result_reached_parent"] is False
    assert body["handover"]["latest"]["reached_parent"] is False
    [given] = body["handover"]["given"]
    assert (given["text"], given["via"], given["reached_parent"]) == (
        "Lint clean: 0 findings in src/.",
        ["report completed"],
        False,
    )


def test_task_detail_gives_a_delivery_by_hand_without_its_header(client, source):
    scenario = load_scenario(next(p for p in OWN_SCENARIOS if p.stem == "manual-delivery"))
    apply_events(source, scenario["events"])
    body = get(client, f"/api/v1/tasks/{quote('task:suite-run', safe='')}", source.token).json()
    latest = body["handover"]["latest"]
    assert latest["reached_parent"] is True
    by_hand = [g for g in body["handover"]["given"] if g["by_hand"]]
    assert [g["text"] for g in by_hand] == [latest["text"]]
    assert by_hand[0]["run"] == latest["run"] == body["latest_result_run"]


def test_tasks_filter_by_open_flag_kind(client, source):
    replayed(source, "seed002")
    items = get(client, "/api/v1/tasks?flag=duplicate_delegation&state=open", source.token).json()[
        "items"
    ]
    assert [t["id"] for t in items] == ["node:delegated-task:cmd%3Aa2"]
    assert items[0]["open_flags"] == ["duplicate_delegation"]


def test_task_detail_takes_a_percent_encoded_id(client, source):
    replayed(source, "seed000")
    task_id = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
    response = get(client, f"/api/v1/tasks/{quote(task_id, safe='')}", source.token)
    body = response.json()
    assert response.status_code == 200
    assert body["id"] == task_id
    assert body["status"] == "completed"
    assert body["handed_to_parent"] == ["Still running, waiting on the checks."]
    assert body["latest_result"].startswith("All checks green")
    assert body["latest_result_reached_parent"] is False
    assert [r["ordinal"] for r in body["runs"] if r["owned"]] == [1, 2, 3, 4]
    assert {f["kind"] for f in body["flags"] if f["state"] == "open"} == {
        "premature_completion",
        "stale_result",
        "undelivered_result",
    }


def test_an_unknown_task_is_404(client, source):
    assert get(client, "/api/v1/tasks/nope", source.token).status_code == 404


def test_an_id_in_two_namespaces_needs_the_namespace(client, source, user):
    # A session sees every namespace, so it must choose; a token sees only its own.
    make_tasks(source, 1)
    other, _ = do_create_source("other")
    make_tasks(other, 1)
    assert get(client, "/api/v1/tasks/task:t0", source.token).json()["namespace"] == "orchestrator"
    client.force_login(user)
    response = client.get("/api/v1/tasks/task:t0")
    assert response.status_code == 409
    assert "orchestrator" in response.json()["error"] and "other" in response.json()["error"]
    chosen = client.get("/api/v1/tasks/task:t0?namespace=other")
    assert chosen.json()["namespace"] == "other"


def test_flags_list_in_the_contract_shape(client, source):
    replayed(source, "seed004")
    body = get(client, "/api/v1/flags?state=open", source.token).json()
    assert body["next"] is None
    (flag,) = body["items"]
    assert set(flag) == {
        "id",
        "kind",
        "state",
        "subject",
        "opened_at",
        "resolved_at",
        "acknowledged_at",
        "snoozed_until",
        "evidence",
    }
    assert flag["subject"] == {
        "type": "thread",
        "id": "thread:coordinator-claude",
        "namespace": "orchestrator",
    }
    assert flag["kind"] == "delegation_rejected"


def test_the_openapi_document_lists_the_contract_paths(client):
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    assert {"/api/v1/events", "/api/v1/tasks", "/api/v1/flags"} <= set(paths)


def test_task_detail_gives_the_failure_class_of_reports_and_runs(client, source):
    # The optional failure_class, as sent, on the report and on its run.
    scenario = load_scenario(next(p for p in OWN_SCENARIOS if p.stem == "account-limit"))
    apply_events(source, scenario["events"])
    body = get(client, f"/api/v1/tasks/{quote('task:al-usage', safe='')}", source.token).json()
    assert [r["failure_class"] for r in body["reports"]] == ["usage_limit"]
    assert [r["failure_class"] for r in body["runs"]] == ["usage_limit"]
    body = get(client, f"/api/v1/tasks/{quote('task:al-quota', safe='')}", source.token).json()
    assert [r["failure_class"] for r in body["reports"]] == [None]


def test_tasks_say_who_is_assigned(client, source, user):
    """The pages' assignee is in the API too: the list and one task name who holds the
    task's problem, and since when (null when nobody)."""
    user.user_permissions.add(Permission.objects.get(codename="act"))
    make_tasks(source, 2)
    task = Task.objects.get(task_id="task:t1")
    do_assign_task(task, user, clock.now())
    items = {t["id"]: t for t in get(client, "/api/v1/tasks", source.token).json()["items"]}
    assert items["task:t1"]["assignee"] == user.get_username()
    assert items["task:t1"]["assigned_at"] is not None
    assert items["task:t0"]["assignee"] is None and items["task:t0"]["assigned_at"] is None
    one = get(client, "/api/v1/tasks/task:t1", source.token).json()
    assert one["assignee"] == user.get_username()
