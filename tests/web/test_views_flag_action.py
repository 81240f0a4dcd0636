"""Acknowledge, snooze and resolve from the task page."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from supervisor.core import clock
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Change, Flag
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

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


def test_an_acknowledgement_can_be_taken_back(client, acting, flagged):
    """There was no way back from an acknowledge given by mistake."""
    client.force_login(acting)
    client.post(f"/flags/{flagged.pk}/", {"action": "acknowledge"})
    html = client.get(f"/tasks/{flagged.task.pk}/").content.decode()
    assert '<button type="submit">Un-acknowledge</button>' in html
    response = client.post(f"/flags/{flagged.pk}/", {"action": "unacknowledge"}, follow=True)
    assert "No longer acknowledged: “Dispatched late”." in response.content.decode()
    flagged.refresh_from_db()
    assert flagged.acknowledged_at is None and flagged.acknowledged_by is None
    # Again changes nothing and records nothing.
    before = Change.objects.filter(kind="flag.unacknowledged").count()
    client.post(f"/flags/{flagged.pk}/", {"action": "unacknowledge"})
    assert Change.objects.filter(kind="flag.unacknowledged").count() == before == 1


def test_a_snooze_can_be_taken_back(client, acting, flagged):
    client.force_login(acting)
    client.post(f"/flags/{flagged.pk}/", {"action": "snooze", "for": "1h"})
    html = client.get(f"/tasks/{flagged.task.pk}/").content.decode()
    assert '<button type="submit">Un-snooze</button>' in html
    client.post(f"/flags/{flagged.pk}/", {"action": "unsnooze"})
    flagged.refresh_from_db()
    assert flagged.snoozed_until is None
    assert Change.objects.filter(kind="flag.unsnoozed").count() == 1
    assert "Un-snooze" not in client.get(f"/tasks/{flagged.task.pk}/").content.decode()


def test_a_flag_can_be_snoozed_until_a_chosen_time(client, acting, flagged):
    client.force_login(acting)
    until = (clock.now() + timedelta(days=3)).replace(second=0, microsecond=0)
    form = {"action": "snooze", "for": "until", "until": until.strftime("%Y-%m-%dT%H:%M")}
    client.post(f"/flags/{flagged.pk}/", form)
    flagged.refresh_from_db()
    assert flagged.snoozed_until == until


def test_a_typed_time_wins_over_the_chosen_length(client, acting, flagged):
    # The time field is folded beside the lengths: the form sends both, and the select
    # still shows its first length when the operator opened the field and typed a time.
    client.force_login(acting)
    until = (clock.now() + timedelta(days=2)).replace(second=0, microsecond=0)
    form = {"action": "snooze", "for": "1h", "until": until.strftime("%Y-%m-%dT%H:%M")}
    client.post(f"/flags/{flagged.pk}/", form)
    flagged.refresh_from_db()
    assert flagged.snoozed_until == until


@pytest.mark.parametrize("until", ["", "yesterday", "2000-01-01T00:00", "9999-12-31T23:59"])
def test_a_snooze_until_a_bad_time_is_refused_saying_why(client, acting, flagged, until):
    client.force_login(acting)
    form = {"action": "snooze", "for": "until", "until": until}
    html = client.post(f"/flags/{flagged.pk}/", form, follow=True).content.decode()
    assert "Could not snooze" in html
    flagged.refresh_from_db()
    assert flagged.snoozed_until is None
