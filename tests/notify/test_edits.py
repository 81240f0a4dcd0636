"""Alert channel and route edits are in the change log, so the audit page says who
disabled the pager channel; a channel's target (it carries secrets) never is."""

import re

import pytest

from supervisor.core.models import Change
from supervisor.notify.models import Channel, Route
from tests.support.cast import ADMIN, login_as

pytestmark = pytest.mark.django_db

SECRET_URL = "json://bot:hunter2@hooks.example.com/secret-token-1234"


def audit_rows(client) -> list[str]:
    html = client.get("/audit/?kind=admin").content.decode()
    return re.findall(r'<tr id="audit-\d+">(.*?)</tr>', html, flags=re.S)


def no_secret_logged():
    for payload in Change.objects.values_list("payload", flat=True):
        assert "hunter2" not in str(payload) and "secret-token" not in str(payload)


def test_a_channel_disabled_by_a_user_shows_in_the_audit_with_their_name(client):
    admin = login_as(client, ADMIN)
    channel = Channel.objects.create(name="pager", kind="apprise", target=SECRET_URL)
    client.post(f"/admin/channels/{channel.pk}/enabled/", {"enabled": "0"})
    client.post(f"/admin/channels/{channel.pk}/enabled/", {"enabled": "0"})  # no change
    disabled, *others = audit_rows(client)
    assert f"user:{admin.get_username()}" in disabled
    assert "Disabled alert channel <code>pager</code>" in disabled
    assert not any("alert channel" in row for row in others)
    client.post(f"/admin/channels/{channel.pk}/enabled/", {"enabled": "1"})
    assert "Enabled alert channel <code>pager</code>" in audit_rows(client)[0]
    no_secret_logged()


def test_creating_and_editing_a_channel_are_recorded_without_its_target(client):
    admin = login_as(client, ADMIN)
    client.post("/admin/channels/new/", {"name": "ops", "kind": "apprise", "target": SECRET_URL})
    channel = Channel.objects.get(name="ops")
    client.post(
        f"/admin/channels/{channel.pk}/",
        {"name": "pager", "kind": "apprise", "target": SECRET_URL.replace("hunter2", "s3cret")},
    )
    edited, created, *_ = audit_rows(client)
    assert "Created alert channel <code>ops</code>" in created
    assert "Edited alert channel <code>pager</code>" in edited
    assert "(was ops)" in edited and "changed: name, target" in edited
    assert f"user:{admin.get_username()}" in edited and "json://hooks.example.com…" in edited
    no_secret_logged()
    assert "s3cret" not in str(list(Change.objects.values_list("payload", flat=True)))


def test_creating_and_disabling_a_route_are_recorded(client):
    admin = login_as(client, ADMIN)
    ops = Channel.objects.create(name="ops", kind="apprise", target=SECRET_URL)
    form = {"name": "night", "channel": ops.pk, "enabled": "on", "min_severity": "warning"}
    form |= {"quiet_tz": "UTC", "group_window": "30"}
    client.post("/admin/routes/new/", form)
    route = Route.objects.get(name="night")
    client.post(f"/admin/routes/{route.pk}/", form | {"enabled": ""})
    edited, created, *_ = audit_rows(client)
    assert "Created alert route <code>night</code>" in created and "enabled" in created
    assert "Edited alert route <code>night</code>" in edited
    assert "changed: enabled" in edited and "disabled" in edited
    assert f"user:{admin.get_username()}" in edited
    change = Change.objects.get(kind="route.edited")
    assert change.payload["changed"] == ["enabled"] and change.payload["route"] == route.pk
    no_secret_logged()
