"""The alert admin pages: channels (masked, validated, test send), routes, the outbox."""

from datetime import timedelta

import pytest

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.notify.models import Channel, Notification, Route
from tests.support.cast import ADMIN, OPERATOR, VIEWER, login_as
from tests.support.markup import Controls

pytestmark = pytest.mark.django_db

SECRET_URL = "json://hooks.example.com/secret-token-1234?pass=hunter2"
PAGES = ("/admin/channels/", "/admin/routes/", "/admin/notifications/")


@pytest.fixture
def admin_client(client):
    login_as(client, ADMIN)
    return client


def create_channel(client, name="ops", kind="apprise", target=SECRET_URL):
    return client.post("/admin/channels/new/", {"name": name, "kind": kind, "target": target})


def test_an_apprise_channel_is_listed_masked_and_its_url_never_shown(admin_client):
    response = create_channel(admin_client)
    assert response.status_code == 302 and response.url == "/admin/channels/"
    channel = Channel.objects.get(name="ops")
    assert channel.target == SECRET_URL
    html = admin_client.get("/admin/channels/").content.decode()
    assert "json://hooks.example.com…" in html
    pages = [*PAGES, f"/admin/channels/{channel.pk}/", "/admin/routes/new/"]
    for page in pages:
        html = admin_client.get(page).content.decode()
        assert "secret-token-1234" not in html and "hunter2" not in html, page


def test_editing_with_an_empty_target_keeps_the_stored_one(admin_client):
    create_channel(admin_client)
    channel = Channel.objects.get(name="ops")
    form = admin_client.get(f"/admin/channels/{channel.pk}/").content.decode()
    assert "Stored: json://hooks.example.com…" in form
    response = admin_client.post(
        f"/admin/channels/{channel.pk}/", {"name": "ops-2", "kind": "apprise", "target": ""}
    )
    assert response.status_code == 302
    channel.refresh_from_db()
    assert (channel.name, channel.target) == ("ops-2", SECRET_URL)


def test_a_bad_apprise_url_is_a_form_error_naming_the_field(admin_client):
    response = create_channel(admin_client, target="nope://what")
    assert response.status_code == 200
    assert "Target: Apprise does not accept this URL." in response.content.decode()
    assert response.context["form"].errors["target"]
    assert not Channel.objects.exists()


def test_email_addresses_are_checked(admin_client):
    response = create_channel(admin_client, kind="email", target="a@example.com, not-an-address")
    assert response.status_code == 200
    assert "not-an-address" in response.context["form"].errors["target"][0]
    response = create_channel(admin_client, kind="email", target="a@example.com,b@example.org")
    assert response.status_code == 302
    assert Channel.objects.get(name="ops").addresses() == ["a@example.com", "b@example.org"]


def test_enable_and_disable(admin_client):
    create_channel(admin_client)
    channel = Channel.objects.get(name="ops")
    admin_client.post(f"/admin/channels/{channel.pk}/enabled/", {"enabled": "0"})
    channel.refresh_from_db()
    assert not channel.enabled
    admin_client.post(f"/admin/channels/{channel.pk}/enabled/", {"enabled": "1"})
    channel.refresh_from_db()
    assert channel.enabled


def test_send_a_test_queues_a_test_notification(admin_client):
    create_channel(admin_client)
    channel = Channel.objects.get(name="ops")
    response = admin_client.post(f"/admin/channels/{channel.pk}/test/", follow=True)
    note = Notification.objects.get(channel=channel)
    assert note.kind == Notification.TEST and note.state == Notification.PENDING
    assert f"was queued (key {note.key})" in response.content.decode()


def test_a_route_is_created_with_its_filters(admin_client):
    for name in ("alpha", "beta"):
        do_create_source(name)
    ops = Channel.objects.create(name="ops", kind="apprise", target="json://h/x")
    boss = Channel.objects.create(name="boss", kind="apprise", target="json://h/y")
    response = admin_client.post(
        "/admin/routes/new/",
        {
            "name": "prod critical",
            "channel": ops.pk,
            "enabled": "on",
            "kinds": ["stale_result"],
            "sources": "beta, alpha,",
            "environments": "prod",
            "min_severity": "critical",
            "quiet_start": "22:00",
            "quiet_end": "07:00",
            "quiet_tz": "Europe/Berlin",
            "group_window": "60",
            "renotify_every": "3600",
            "escalate_after": "1800",
            "escalate_to": boss.pk,
        },
    )
    assert response.status_code == 302, response.context["form"].errors
    route = Route.objects.get(name="prod critical")
    assert route.kinds == ["stale_result"]
    assert route.sources == ["alpha", "beta"] and route.environments == ["prod"]
    assert (route.min_severity, route.quiet_tz, route.group_window) == (
        "critical",
        "Europe/Berlin",
        60,
    )
    assert (route.renotify_every, route.escalate_after, route.escalate_to) == (3600, 1800, boss)
    html = admin_client.get("/admin/routes/").content.decode()
    assert "alpha, beta" in html and "Europe/Berlin" in html
    form = admin_client.get(f"/admin/routes/{route.pk}/").content.decode()
    assert 'value="alpha, beta"' in form


def test_route_errors_name_the_field(admin_client):
    ops = Channel.objects.create(name="ops", kind="apprise", target="json://h/x")
    response = admin_client.post(
        "/admin/routes/new/",
        {
            "channel": ops.pk,
            "min_severity": "warning",
            "quiet_start": "22:00",
            "quiet_tz": "Mars/Olympus",
            "group_window": "30",
            "escalate_after": "60",
        },
    )
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert "Quiet hours time zone" in errors["quiet_tz"][0]
    assert "Quiet hours" in errors["quiet_end"][0]
    assert "Escalate to" in errors["escalate_to"][0]
    assert not Route.objects.exists()


def _note(channel, key, state, **extra):
    return Notification.objects.create(
        key=key, channel=channel, kind="opened", subject="s", body="b", state=state, **extra
    )


def test_the_outbox_lists_a_failing_row_and_retry_now_makes_it_due(admin_client):
    channel = Channel.objects.create(name="ops", kind="apprise", target="json://h/x")
    later = clock.now() + timedelta(hours=1)
    failing = _note(
        channel, "k:fail", Notification.FAILING, attempts=3, last_error="HTTP 500", due_at=later
    )
    _note(channel, "k:sent", Notification.SENT, sent_at=clock.now())
    html = admin_client.get("/admin/notifications/?state=failing").content.decode()
    assert "k:fail" in html and "HTTP 500" in html and "k:sent" not in html
    assert "Retry now" in html
    response = admin_client.post(f"/admin/notifications/{failing.pk}/retry/", {"state": "failing"})
    assert response.status_code == 302 and response.url == "/admin/notifications/?state=failing"
    failing.refresh_from_db()
    assert failing.due_at <= clock.now() and failing.state == Notification.FAILING


def test_the_outbox_shows_a_failed_row_with_its_reason_and_sends_it_again(admin_client):
    channel = Channel.objects.create(name="ops", kind="apprise", target="json://h/x")
    reason = "channel ops: the service answered a redirect (HTTP 302), which is not followed"
    failed = _note(channel, "k:failed", Notification.FAILED, attempts=1, last_error=reason)
    _note(channel, "k:failing", Notification.FAILING, attempts=2, last_error="HTTP 503")
    html = admin_client.get("/admin/notifications/?state=failed").content.decode()
    assert "k:failed" in html and "k:failing" not in html
    assert "answered a redirect (HTTP 302)" in html
    assert "Send again<span" in html and "Retry now<span" not in html
    assert '<option value="failed" selected>' in html
    response = admin_client.post(
        f"/admin/notifications/{failed.pk}/retry/", {"state": "failed"}, follow=True
    )
    assert "is due now with all its attempts back and was enqueued" in response.content.decode()
    failed.refresh_from_db()
    assert (failed.state, failed.attempts) == (Notification.PENDING, 0)
    assert failed.due_at <= clock.now()


def test_retry_now_leaves_a_row_being_sent_alone(admin_client):
    channel = Channel.objects.create(name="ops", kind="apprise", target="json://h/x")
    lease = clock.now() + timedelta(seconds=60)
    sending = _note(channel, "k:sending", Notification.SENDING, due_at=lease)
    response = admin_client.post(f"/admin/notifications/{sending.pk}/retry/", follow=True)
    assert "nothing to retry" in response.content.decode()
    sending.refresh_from_db()
    assert sending.state == Notification.SENDING and sending.due_at == lease


def test_the_nav_links_show_for_admins(admin_client):
    html = admin_client.get("/admin/channels/").content.decode()
    for page in PAGES:
        assert f'href="{page}"' in html


@pytest.mark.parametrize("role", [VIEWER, OPERATOR])
@pytest.mark.parametrize("page", PAGES)
def test_viewers_and_operators_get_403(client, role, page):
    login_as(client, role)
    assert client.get(page).status_code == 403
    html = client.get("/audit/").content.decode()
    assert f'href="{page}"' not in html


def test_every_control_on_the_alert_pages_has_a_label(admin_client):
    channel = Channel.objects.create(name="ops", kind="apprise", target="json://h/x")
    route = Route.objects.create(channel=channel)
    _note(channel, "k:pending", Notification.PENDING)
    _note(channel, "k:failed", Notification.FAILED, last_error="HTTP 404")
    pages = [
        *PAGES,
        "/admin/channels/new/",
        f"/admin/channels/{channel.pk}/",
        "/admin/routes/new/",
        f"/admin/routes/{route.pk}/",
    ]
    for page in pages:
        parser = Controls()
        parser.feed(admin_client.get(page).content.decode())
        assert parser.unlabelled() == [], page


def test_the_route_form_names_kinds_in_words_and_refuses_an_unknown_source(admin_client):
    """It listed raw kind names, and took any source name, a typo included."""
    do_create_source("alpha")
    html = admin_client.get("/admin/routes/new/").content.decode()
    assert "Stale result handed on" in html and ">stale result<" not in html
    ops = Channel.objects.create(name="ops", kind="apprise", target="json://h/x")
    form = {"channel": ops.pk, "min_severity": "warning", "group_window": "30"}
    response = admin_client.post("/admin/routes/new/", {**form, "sources": "alpha, alpah"})
    assert response.status_code == 200
    (error,) = response.context["form"].errors["sources"]
    assert "alpah" in error and "alpha" in error.split("known:")[1]
    assert not Route.objects.exists()
