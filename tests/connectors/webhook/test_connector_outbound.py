"""The webhook connector sends only where the outbound guard allows
(supervisor/core/outbound.py): its settings refuse a link-local or metadata address in
any spelling, and loopback or private ones without SUPERVISOR_OUTBOUND_ALLOW_PRIVATE;
an action and the connection test re-check the address after resolution, before the
socket connects. Nothing leaves loopback (tests/support/outbound.py); a real receiver on
loopback counts nothing when loopback is refused."""

from urllib.parse import urlsplit

import pytest

from supervisor.connectors.webhook.connector import WebhookConnector
from supervisor.core.access.sources import do_bind_connector
from supervisor.core.contract.connectors import ConnectorError, Outgoing, SettingsError
from tests.support.cast import ADMIN, login_as
from tests.support.outbound import Names
from tests.support.receiver import Receiver

SECRET = "0123456789abcdef"

METADATA_URLS = [
    "http://169.254.169.254/latest/meta-data/",
    "http://2852039166/",  # decimal
    "http://0251.0376.0251.0376/",  # octal
    "http://0xa9fea9fe/",  # hex, one number
    "http://169.254.43518/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of the metadata address
    "https://[fd00:ec2::254]/",
    "http://[fe80::a%25eth0]/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://100.100.100.200/latest/meta-data/",  # Alibaba Cloud's
    "http://0.0.0.0:8000/",
    "http://[::]:8000/",
]
PRIVATE_URLS = [
    "http://127.0.0.1:9/hook",
    "http://127.1:9/hook",
    "http://2130706433:9/hook",
    "http://localhost:9/hook",
    "http://api.localhost:9/hook",
    "http://[::1]:9/hook",
    "http://10.0.0.5/hook",
    "http://192.168.1.20/hook",
    "http://172.16.0.1/hook",
    "http://[fd12:3456::1]/hook",
    "http://100.64.0.1/hook",
]


def outgoing() -> Outgoing:
    return Outgoing(
        action_id=7,
        kind="deliver",
        idempotency_key="action-7",
        namespace="t3",
        task_id="task-1",
        task_title="Fix the retry port",
        thread_id="thread-parent",
        run_id="run-2",
        text="the port is fixed",
        actor="user:op",
    )


def port(receiver: Receiver) -> int:
    return urlsplit(receiver.url).port


def webhook(url: str) -> WebhookConnector:
    return WebhookConnector(None, {"url": url, "secret": SECRET, "timeout": 2})


@pytest.fixture
def receiver():
    with Receiver(secret=SECRET) as r:
        yield r


# --- settings ------------------------------------------------------------------------


@pytest.mark.parametrize("url", METADATA_URLS)
def test_settings_refuse_a_metadata_address_in_any_spelling(allow_private, url):
    with pytest.raises(SettingsError) as caught:
        WebhookConnector.check_settings({"url": url, "secret": SECRET})
    message = str(caught.value)
    assert message.startswith("url: ") and "never allowed" in message


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_settings_refuse_loopback_and_private_addresses_without_the_setting(refuse_private, url):
    with pytest.raises(SettingsError) as caught:
        WebhookConnector.check_settings({"url": url, "secret": SECRET})
    assert "allowed only with SUPERVISOR_OUTBOUND_ALLOW_PRIVATE=1" in str(caught.value)


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_settings_take_loopback_and_private_addresses_with_the_setting(allow_private, url):
    assert WebhookConnector.check_settings({"url": url, "secret": SECRET})["url"] == url


def test_settings_take_a_public_address_and_a_name_without_the_setting(refuse_private):
    for url in ("https://93.184.215.14/hook", "https://hooks.example.com/supervisor"):
        assert WebhookConnector.check_settings({"url": url, "secret": SECRET})["url"] == url


# --- sending: the address after resolution --------------------------------------------


def test_an_action_to_a_name_resolving_to_loopback_is_refused_and_nothing_arrives(
    receiver, connects, refuse_private, monkeypatch
):
    Names(monkeypatch, {"hooks.example.test": "127.0.0.1"})
    url = f"http://hooks.example.test:{port(receiver)}/hook"
    with pytest.raises(ConnectorError) as caught:
        webhook(url).send_message(outgoing(), timeout=5)
    assert receiver.attempts == 0
    assert caught.value.retryable is False
    assert str(caught.value) == (
        f"webhook {url} was not sent: 127.0.0.1 is a loopback address, allowed only with "
        "SUPERVISOR_OUTBOUND_ALLOW_PRIVATE=1"
    )


def test_the_same_action_arrives_with_the_setting(receiver, connects, allow_private, monkeypatch):
    Names(monkeypatch, {"hooks.example.test": "127.0.0.1"})
    url = f"http://hooks.example.test:{port(receiver)}/hook"
    assert webhook(url).send_message(outgoing(), timeout=5).status == "200"
    assert len(receiver.deliveries) == 1


@pytest.mark.parametrize(
    "answer", ["169.254.169.254", "fd00:ec2::254", "93.184.215.14,169.254.169.254"]
)
def test_a_connection_test_to_a_name_resolving_to_metadata_is_refused_before_connecting(
    connects, allow_private, monkeypatch, answer
):
    Names(monkeypatch, {"hooks.example.test": answer})
    with pytest.raises(ConnectorError) as caught:
        webhook("http://hooks.example.test/hook").check_connection(timeout=5)
    assert connects.addresses == []
    assert "never allowed" in str(caught.value)


def test_an_address_that_changes_after_the_check_is_refused_at_connect(
    receiver, connects, refuse_private, monkeypatch
):
    """DNS rebinding: the guard's look-up gets a public address, the connection's own a
    moment later gets loopback. The socket's address is checked too: nothing arrives."""
    Names(monkeypatch, {"hooks.example.test": ["93.184.215.14", "127.0.0.1"]})
    with pytest.raises(ConnectorError) as caught:
        webhook(f"http://hooks.example.test:{port(receiver)}/hook").send_message(
            outgoing(), timeout=5
        )
    assert receiver.attempts == 0 and connects.off_loopback == []
    assert "127.0.0.1 is a loopback address" in str(caught.value)


# --- the source page: the connector form and "Test connection" ------------------------


@pytest.mark.django_db
def test_the_connector_form_refuses_a_metadata_url_naming_the_problem(
    client, source, allow_private
):
    login_as(client, ADMIN)
    settings = '{"url": "http://169.254.169.254/latest/", "secret": "0123456789abcdef"}'
    response = client.post(
        f"/admin/sources/{source.pk}/connector/",
        {"connector": "webhook", "connector_settings": settings},
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "webhook settings: url: 169.254.169.254 is a link-local address" in html
    source.refresh_from_db()
    assert source.connector != "webhook"


@pytest.mark.django_db
def test_test_connection_of_a_source_whose_name_resolves_to_metadata_sends_nothing(
    client, source, connects, allow_private, monkeypatch
):
    login_as(client, ADMIN)
    do_bind_connector(source, "webhook", {"url": "http://hooks.example.test/", "secret": SECRET})
    Names(monkeypatch, {"hooks.example.test": "169.254.169.254"})
    html = client.post(f"/admin/sources/{source.pk}/test/", follow=True).content.decode()
    assert connects.addresses == []
    assert "Connection test of orchestrator failed: webhook http://hooks.example.test/ was " in html
    assert "169.254.169.254 is a link-local address" in html
