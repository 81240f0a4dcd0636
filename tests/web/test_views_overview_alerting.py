"""The overview says when no alert can reach anyone (no channel, or no route to one):
what is missing, where an admin fixes it, whom the others ask."""

import pytest

from supervisor.notify.models import Channel, Route
from tests.support.cast import ADMIN, OPERATOR, VIEWER, login_as, make_user

pytestmark = pytest.mark.django_db

WARNING = 'id="alerting-gaps"'


def overview(client) -> str:
    response = client.get("/")
    assert response.status_code == 200
    return response.content.decode()


def test_an_admin_is_told_no_channel_exists_and_where_to_add_one(client):
    login_as(client, ADMIN)
    html = overview(client)
    assert WARNING in html
    assert "No alert channel is set up" in html and "no route sends flags" in html
    assert 'href="/admin/channels/new/"' in html and 'href="/admin/routes/new/"' in html


@pytest.mark.parametrize("role", [OPERATOR, VIEWER])
def test_others_are_told_which_admin_to_ask(client, role):
    make_user("carol", ADMIN)
    login_as(client, role)
    html = overview(client)
    assert WARNING in html and "ask <strong>carol</strong>" in html
    assert "/admin/channels/new/" not in html


def test_a_channel_without_a_route_is_still_missing_a_route(client):
    Channel.objects.create(name="ops", kind="apprise", target="json://h/x")
    login_as(client, ADMIN)
    html = overview(client)
    assert "No enabled route sends flags to a channel" in html
    assert 'href="/admin/routes/new/"' in html and 'href="/admin/channels/new/"' not in html


def test_a_route_to_a_disabled_channel_does_not_count(client):
    channel = Channel.objects.create(name="ops", kind="apprise", target="json://h/x", enabled=False)
    Route.objects.create(channel=channel)
    login_as(client, OPERATOR)
    assert "No alert channel is set up (or none is enabled)" in overview(client)


def test_no_warning_once_a_route_reaches_a_channel(client):
    Route.objects.create(channel=Channel.objects.create(name="ops", kind="apprise", target="j://"))
    login_as(client, OPERATOR)
    assert WARNING not in overview(client)
