"""Alert channels send only where the outbound guard allows (supervisor/core/outbound.py):
never to a link-local or cloud metadata address, to loopback and private addresses only
with SUPERVISOR_OUTBOUND_ALLOW_PRIVATE. The address is checked after resolution, before
anything is sent, whatever Apprise's plugin speaks (HTTP or SMTP). Every refusal is
checked before a socket connects: nothing leaves loopback (tests/support/outbound.py), and a
real receiver on loopback counts nothing when loopback is refused."""

import pytest

from supervisor.jobs import notifications
from supervisor.notify.channels import do_send_test
from supervisor.notify.models import Channel, Notification
from tests.support.alert_receivers import HttpReceiver, SmtpReceiver
from tests.support.alerts import T0
from tests.support.cast import ADMIN, login_as
from tests.support.outbound import Names

pytestmark = pytest.mark.django_db

# Spellings of the metadata address a URL may carry; each is the one address. (Apprise
# itself refuses an octal one; the webhook's tests take it.)
METADATA_TARGETS = [
    "json://169.254.169.254/latest/meta-data",
    "json://2852039166/latest/meta-data",  # decimal
    "json://0xa9.0xfe.0xa9.0xfe/",  # hex
    "json://169.254.43518/",  # the last two parts as one number
    "json://[::ffff:169.254.169.254]/",  # IPv4-mapped IPv6
    "json://[fd00:ec2::254]/",  # AWS's IPv6 metadata address
    "json://[fe80::1]/",
    "ntfy://169.254.169.254/ops",
    "jsons://169.254.169.254/",
]


@pytest.fixture
def http(db):
    with HttpReceiver() as receiver:
        yield receiver


def sent_test(target: str) -> Notification:
    """A channel saved as it was before the guard (straight into the database), its
    "Send a test", and the worker's one attempt to send it."""
    channel = Channel.objects.create(name="hook", kind="apprise", target=target)
    note = do_send_test(channel, T0)
    notifications.perform(note.pk)
    note.refresh_from_db()
    return note


@pytest.mark.parametrize("target", METADATA_TARGETS)
def test_a_test_message_to_a_metadata_address_is_refused_before_anything_is_sent(
    connects, allow_private, target
):
    note = sent_test(target)
    assert connects.off_loopback == []
    assert note.state == Notification.FAILED and note.attempts == 1  # not retried
    assert "link-local" in note.last_error or "metadata" in note.last_error
    assert "never allowed" in note.last_error
    assert "169.254" not in note.last_error  # the target is a secret, its address too


def test_a_name_resolving_to_a_metadata_address_is_refused_when_sent(
    connects, allow_private, monkeypatch
):
    names = Names(monkeypatch, {"alerts.example.test": "93.184.215.14,169.254.169.254"})
    note = sent_test("json://alerts.example.test/hook")
    assert names.asked and connects.off_loopback == []
    assert note.state == Notification.FAILED
    assert "link-local" in note.last_error


def test_loopback_is_refused_without_the_setting_and_nothing_arrives(
    http, connects, refuse_private
):
    note = sent_test(f"json://127.0.0.1:{http.port}/hook")
    assert http.paths == [] and http.raw == []
    assert note.state == Notification.FAILED
    assert "a loopback address" in note.last_error
    assert "SUPERVISOR_OUTBOUND_ALLOW_PRIVATE" in note.last_error


def test_a_private_address_is_refused_without_the_setting(connects, refuse_private, monkeypatch):
    Names(monkeypatch, {"ntfy.internal.test": "10.1.2.3"})
    note = sent_test("ntfy://ntfy.internal.test/ops")
    assert connects.off_loopback == []
    assert note.state == Notification.FAILED and "a private address" in note.last_error


def test_loopback_is_sent_to_with_the_setting(http, connects, allow_private):
    note = sent_test(f"json://127.0.0.1:{http.port}/hook")
    assert note.state == Notification.SENT
    assert http.paths == ["/hook"]


def test_email_through_apprise_to_loopback_is_refused_without_the_setting(
    db, connects, refuse_private
):
    with SmtpReceiver() as smtp:
        note = sent_test(
            f"mailto://127.0.0.1:{smtp.port}?from=sup@example.com&to=ops@example.com&mode=insecure"
        )
        assert smtp.raw == []
    assert note.state == Notification.FAILED and "a loopback address" in note.last_error


def test_an_address_that_changes_after_the_check_is_refused_at_connect(
    http, connects, refuse_private, monkeypatch
):
    """DNS rebinding: the guard's look-up gets a public address, the plugin's own a
    moment later gets loopback. The socket's own address is checked: nothing arrives."""
    Names(monkeypatch, {"rebind.example.test": ["93.184.215.14", "127.0.0.1"]})
    note = sent_test(f"json://rebind.example.test:{http.port}/hook")
    assert http.paths == []
    assert connects.off_loopback == []
    assert note.state == Notification.FAILED and "a loopback address" in note.last_error


# --- the channel form and "Send a test" --------------------------------------------


@pytest.fixture
def admin_client(client):
    login_as(client, ADMIN)
    return client


def create_channel(client, target: str):
    return client.post("/admin/channels/new/", {"name": "ops", "kind": "apprise", "target": target})


@pytest.mark.parametrize("target", METADATA_TARGETS)
def test_the_form_refuses_a_metadata_address_naming_the_problem(
    admin_client, allow_private, target
):
    response = create_channel(admin_client, target)
    assert response.status_code == 200
    (error,) = response.context["form"].errors["target"]
    assert error.startswith("Target: ") and "never allowed" in error
    assert "link-local" in error or "metadata" in error
    assert not Channel.objects.exists()


@pytest.mark.parametrize(
    "target",
    ["json://127.0.0.1:9/hook", "json://localhost:9/hook", "json://[::1]:9/", "json://10.0.0.8/"],
)
def test_the_form_refuses_loopback_and_private_addresses_without_the_setting(
    admin_client, refuse_private, target
):
    response = create_channel(admin_client, target)
    (error,) = response.context["form"].errors["target"]
    assert "SUPERVISOR_OUTBOUND_ALLOW_PRIVATE" in error
    assert not Channel.objects.exists()


def test_the_form_accepts_loopback_with_the_setting(admin_client, allow_private):
    assert create_channel(admin_client, "json://127.0.0.1:9/hook").status_code == 302


def test_the_form_does_not_take_a_services_token_for_an_address(admin_client, refuse_private):
    # Discord's webhook id is the URL's "host": a number, not where Apprise sends.
    target = "discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js"
    assert create_channel(admin_client, target).status_code == 302


def test_send_a_test_to_a_refused_target_queues_nothing_and_says_why(
    admin_client, connects, allow_private
):
    channel = Channel.objects.create(
        name="meta", kind="apprise", target="json://169.254.169.254/latest"
    )
    response = admin_client.post(f"/admin/channels/{channel.pk}/test/", follow=True)
    html = response.content.decode()
    assert not Notification.objects.exists()
    assert "No test message was sent to meta" in html and "never allowed" in html
    assert connects.off_loopback == []
