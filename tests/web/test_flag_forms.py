"""Acknowledge, snooze and resolve from the task page."""

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from supervisor.core import clock
from supervisor.core.evaluate import evaluate
from supervisor.core.ingest import apply_events
from supervisor.core.models import Flag
from tests.conftest import CONTRACT_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db


@pytest.fixture
def flagged(source):
    scenario = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed003" in p.name))
    apply_events(source, scenario["events"])
    evaluate(source.namespace_id, clock.now())
    return Flag.objects.select_related("task").get(kind="dispatch_lag")


@pytest.fixture
def acting(user):
    user.user_permissions.add(Permission.objects.get(codename="act"))
    return user


def test_the_task_page_offers_the_flag_actions_to_an_operator(client, acting, flagged):
    client.force_login(acting)
    html = client.get(f"/tasks/{flagged.task.pk}/").content.decode()
    assert "dispatch_lag" in html
    for button in ("Acknowledge", "Snooze", "Resolve"):
        assert f'<button type="submit">{button}</button>' in html
    assert f'<label for="reason-{flagged.pk}">Reason</label>' in html


def test_a_viewer_sees_the_flag_but_no_actions(client, user, flagged):
    client.force_login(user)
    html = client.get(f"/tasks/{flagged.task.pk}/").content.decode()
    assert "dispatch_lag" in html and "Acknowledge" not in html


def test_acknowledging_from_the_page_returns_to_the_task(client, acting, flagged):
    client.force_login(acting)
    response = client.post(f"/flags/{flagged.pk}/", {"action": "acknowledge"}, follow=True)
    assert response.redirect_chain[-1][0] == f"/tasks/{flagged.task.pk}/"
    assert "Acknowledged “Dispatched late”." in response.content.decode()
    flagged.refresh_from_db()
    assert flagged.acknowledged_by == acting


def test_snoozing_from_the_page_sets_until(client, acting, flagged):
    client.force_login(acting)
    client.post(f"/flags/{flagged.pk}/", {"action": "snooze", "for": "4h"})
    flagged.refresh_from_db()
    hours = (flagged.snoozed_until - clock.now()).total_seconds() / 3600
    assert 3.9 < hours <= 4


def test_resolving_from_the_page_needs_a_reason(client, acting, flagged):
    client.force_login(acting)
    response = client.post(f"/flags/{flagged.pk}/", {"action": "resolve"}, follow=True)
    assert "a reason is needed" in response.content.decode()
    client.post(f"/flags/{flagged.pk}/", {"action": "resolve", "reason": "expected lag"})
    flagged.refresh_from_db()
    assert flagged.state == "resolved" and flagged.resolve_reason == "expected lag"


def test_a_viewer_may_not_post_a_flag_action(client, user, flagged):
    client.force_login(user)
    assert client.post(f"/flags/{flagged.pk}/", {"action": "acknowledge"}).status_code == 403


def test_flag_forms_need_the_csrf_token(acting, flagged):
    client = Client(enforce_csrf_checks=True)
    client.force_login(acting)
    assert client.post(f"/flags/{flagged.pk}/", {"action": "acknowledge"}).status_code == 403
    flagged.refresh_from_db()
    assert flagged.acknowledged_at is None


def test_the_list_shows_each_sources_data_as_of(client, user, flagged, source):
    client.force_login(user)
    html = client.get("/").content.decode()
    assert "The last event from each source:" in html and f"<strong>{source.name}</strong>" in html
