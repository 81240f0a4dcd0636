"""POST /api/v1/flags/{id}: acknowledge, snooze, resolve with a reason (contract §6)."""

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.flags.writers import do_resolve_flag_by_hand
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Change, Flag, ToolRejection
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db


@pytest.fixture
def flag(source):
    """seed004's delegation_rejected, open on its thread."""
    scenario = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed004" in p.name))
    apply_events(source, scenario["events"])
    evaluate(source.namespace_id, clock.now())
    return Flag.objects.get(kind="delegation_rejected", state="open")


def act(client, flag, token=None, **body):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.post(
        f"/api/v1/flags/{flag.pk}",
        json.dumps(body),
        content_type="application/json",
        headers=headers,
    )


def test_acknowledging_keeps_the_flag_open_and_records_when(client, source, flag):
    response = act(client, flag, source.token, action="acknowledge")
    body = response.json()
    assert response.status_code == 200
    assert body["state"] == "open" and body["acknowledged_at"] is not None
    assert Change.objects.filter(kind="flag.acknowledged").count() == 1


def test_acknowledging_twice_keeps_the_first_acknowledgement(client, source, flag):
    first = act(client, flag, source.token, action="acknowledge").json()["acknowledged_at"]
    second = act(client, flag, source.token, action="acknowledge").json()["acknowledged_at"]
    assert first == second
    assert Change.objects.filter(kind="flag.acknowledged").count() == 1


def test_snoozing_sets_until_and_keeps_the_flag_open(client, source, flag):
    until = (clock.now() + timedelta(hours=2)).isoformat()
    body = act(client, flag, source.token, action="snooze", until=until).json()
    assert body["state"] == "open"
    assert body["snoozed_until"].startswith(until[:19])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"action": "snooze"}, "snooze needs 'until'"),
        ({"action": "snooze", "until": "2000-01-01T00:00:00Z"}, "must be in the future"),
        ({"action": "resolve"}, "a reason is needed"),
        ({"action": "resolve", "reason": "   "}, "a reason is needed"),
    ],
    ids=["snooze-without-until", "snooze-in-the-past", "resolve-without-reason", "blank"],
)
def test_a_bad_flag_action_is_400_with_the_reason(client, source, flag, body, message):
    response = act(client, flag, source.token, **body)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_an_unknown_action_is_400(client, source, flag):
    assert act(client, flag, source.token, action="delete").status_code == 400


def test_resolving_with_a_reason_records_it(client, source, flag):
    body = act(client, flag, source.token, action="resolve", reason="false alarm").json()
    assert body["state"] == "resolved"
    flag.refresh_from_db()
    assert flag.resolve_reason == "false alarm" and flag.suppressed
    assert Change.objects.get(kind="flag.resolved").payload["reason"] == "false alarm"


def test_resolving_twice_is_a_no_op(client, source, flag):
    act(client, flag, source.token, action="resolve", reason="false alarm")
    again = act(client, flag, source.token, action="resolve", reason="other")
    assert again.status_code == 200
    flag.refresh_from_db()
    assert flag.resolve_reason == "false alarm"
    assert Change.objects.filter(kind="flag.resolved").count() == 1


def test_acknowledging_a_resolved_flag_is_409(client, source, flag):
    act(client, flag, source.token, action="resolve", reason="false alarm")
    response = act(client, flag, source.token, action="acknowledge")
    assert response.status_code == 409
    assert "resolved" in response.json()["error"]


def test_a_flag_resolved_by_hand_stays_resolved_while_its_condition_holds(source, flag):
    do_resolve_flag_by_hand(flag, clock.now(), reason="known")
    evaluate(source.namespace_id, clock.now())
    assert not Flag.objects.filter(kind="delegation_rejected", state="open").exists()


def test_it_opens_again_once_its_condition_stopped_and_holds_again(source, flag):
    do_resolve_flag_by_hand(flag, clock.now(), reason="known")
    # Take the thread's rejections away: the condition stops holding...
    ToolRejection.objects.all().delete()
    evaluate(source.namespace_id, clock.now())
    assert not Flag.objects.get(pk=flag.pk).suppressed
    # ...and a new rejection makes it hold again: a new flag record opens.
    apply_events(
        source,
        [
            {
                "id": "again",
                "type": "tool.rejected",
                "at": "2026-10-04T05:00:00Z",
                "data": {
                    "thread": "thread:coordinator-claude",
                    "tool": "delegate_task",
                    "code": "parent_not_active",
                    "message": "again",
                },
            }
        ],
    )
    evaluate(source.namespace_id, clock.now())
    assert Flag.objects.filter(kind="delegation_rejected").count() == 2
    assert Flag.objects.filter(kind="delegation_rejected", state="open").count() == 1


def test_acting_needs_the_act_scope(client, flag):
    _, token = do_create_source("reader", scopes="ingest,read")
    response = act(client, flag, token, action="acknowledge")
    assert response.status_code == 403
    assert "act" in response.json()["error"]


def test_acting_anonymously_is_401(client, flag):
    assert act(client, flag, action="acknowledge").status_code == 401


def test_a_logged_in_viewer_may_not_act(client, user, flag):
    client.force_login(user)
    response = act(client, flag, action="acknowledge")
    assert response.status_code == 403


def test_a_logged_in_operator_acts_with_the_csrf_token(user, flag):
    user.user_permissions.add(Permission.objects.get(codename="act"))
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert act(client, flag, action="acknowledge").status_code == 403  # no CSRF token
    client.get("/")  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    response = client.post(
        f"/api/v1/flags/{flag.pk}",
        json.dumps({"action": "acknowledge"}),
        content_type="application/json",
        headers={"X-CSRFToken": token},
    )
    assert response.status_code == 200


def test_an_unknown_flag_is_404(client, source):
    response = act(client, Flag(pk=999999), source.token, action="acknowledge")
    assert response.status_code == 404


def test_a_token_with_act_alone_acknowledges_and_is_shown_no_evidence(client, source, flag):
    # Contract §6: `act` acts. The evidence quotes what agents wrote: only with `read`.
    assert flag.evidence
    _, token = do_create_source("actor", namespace=source.namespace.name, scopes="act")
    response = act(client, flag, token, action="acknowledge")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["acknowledged_at"] is not None and body["evidence"] is None
    assert "'read'" in body["withheld"]
