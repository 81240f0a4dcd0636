"""The webhook connector against a real receiver on loopback: signing, idempotency, how
each kind of failure is reported, settings, and the receiver's own behaviour."""

import http.client
import json
import socket
import threading
import time
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import pytest

from supervisor.connectors.webhook import signing
from supervisor.connectors.webhook.connector import WebhookConnector
from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.actions import writers as actions
from supervisor.core.actions.writers import do_request_action
from supervisor.core.contract.connectors import ConnectorError, Outgoing, SettingsError
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Task
from supervisor.jobs import operator_actions
from tests.support.receiver import Receiver
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

SECRET = "0123456789abcdef"
SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))
SEED000_TASK = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
UNTIL = datetime.fromisoformat(SEED000["until"].replace("Z", "+00:00"))


def outgoing(**changes) -> Outgoing:
    fields = {
        "action_id": 7,
        "kind": "deliver",
        "idempotency_key": "action-7",
        "namespace": "t3",
        "task_id": "task-1",
        "task_title": "Fix the retry port",
        "thread_id": "thread-parent",
        "run_id": "run-2",
        "text": "Résumé: the port is fixed ✓",
        "actor": "user:op",
        "reason": None,
    }
    return Outgoing(**(fields | changes))


def webhook(url: str, **settings) -> WebhookConnector:
    return WebhookConnector(None, {"url": url, "secret": SECRET, "timeout": 1} | settings)


def post_raw(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    try:
        connection.request("POST", parts.path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.fixture
def receiver():
    with Receiver(secret=SECRET) as r:
        yield r


# --- signing -------------------------------------------------------------------------


def test_the_receiver_verifies_the_signed_body_the_connector_sends(receiver):
    action = outgoing()

    receipt = webhook(receiver.url).perform(action, timeout=5)

    assert (receipt.status, receipt.duplicate) == ("200", False)
    assert receiver.deliveries == [{"type": "supervisor.action", "action": action.as_json()}]
    # Compact, sorted keys, UTF-8 (not \\u escapes): what the signature was computed on.
    expected = json.dumps(
        {"type": "supervisor.action", "action": action.as_json()},
        separators=(",", ":"),
        sort_keys=True,
        ensure_ascii=False,
    ).encode("utf-8")
    assert receiver.requests[0].body == expected


def test_a_tampered_body_is_refused_by_the_receiver(receiver):
    body = b'{"type":"supervisor.action","action":{"kind":"deliver"}}'
    tampered = body.replace(b"deliver", b"cancel")
    headers = {signing.HEADER: signing.sign(SECRET, body), signing.IDEMPOTENCY_HEADER: "k1"}

    status, answer = post_raw(receiver.url, tampered, headers)

    assert status == 401
    assert answer["error"] == "signature does not match the body"
    assert receiver.deliveries == []


def test_a_wrong_secret_is_refused_and_not_retried(receiver):
    connector = webhook(receiver.url, secret="another-secret-0123")

    with pytest.raises(ConnectorError) as caught:
        connector.perform(outgoing(), timeout=5)

    assert caught.value.retryable is False
    assert "webhook answered 401" in str(caught.value)
    assert "signature does not match" in str(caught.value)
    assert receiver.deliveries == []


def test_the_receiver_refuses_a_signature_older_than_its_tolerance(receiver):
    body = b'{"type":"supervisor.action"}'
    old = signing.sign(SECRET, body, now=time.time() - 301)

    status, answer = post_raw(receiver.url, body, {signing.HEADER: old, "Idempotency-Key": "k"})

    assert status == 401
    assert "more than 300s from now" in answer["error"]


def test_verify_accepts_a_signature_within_tolerance_and_rejects_one_beyond():
    body = b"{}"
    signing.verify(SECRET, body, signing.sign(SECRET, body, now=1000), now=1299)
    with pytest.raises(signing.BadSignature, match="more than 300s"):
        signing.verify(SECRET, body, signing.sign(SECRET, body, now=1000), now=1301)


# --- idempotency ---------------------------------------------------------------------


def test_a_repeated_idempotency_key_is_one_delivery_reported_as_duplicate(receiver):
    connector = webhook(receiver.url)

    first = connector.perform(outgoing(), timeout=5)
    second = connector.perform(outgoing(), timeout=5)

    assert (first.duplicate, second.duplicate) == (False, True)
    assert receiver.attempts == 2
    assert len(receiver.deliveries) == 1
    assert list(receiver.by_key) == ["action-7"]
    assert receiver.requests[1].headers[signing.IDEMPOTENCY_HEADER] == "action-7"


def test_distinct_keys_are_distinct_deliveries(receiver):
    connector = webhook(receiver.url)

    connector.perform(outgoing(idempotency_key="a"), timeout=5)
    connector.perform(outgoing(idempotency_key="b"), timeout=5)

    assert len(receiver.deliveries) == 2


@pytest.mark.django_db
def test_a_resend_after_a_worker_died_carries_the_actions_one_key(receiver, monkeypatch):
    """The crash window: the receiver took the delivery, the worker died before recording
    it; the worker that takes the action back after its lease sends it again."""
    source, _ = do_create_source("t3-hook", scopes="ingest,read,act")
    source.connector = "webhook"
    source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 1}
    source.save()
    apply_events(source, SEED000["events"])
    task = Task.objects.select_related("namespace", "parent_thread").get(task_id=SEED000_TASK)
    with clock.virtual_clock(UNTIL):
        action, _ = do_request_action(task, "deliver", actor="user:op")

    def killed(*args, **kwargs):
        raise SystemExit(1)

    with monkeypatch.context() as patched, clock.virtual_clock(UNTIL):
        patched.setattr(actions, "do_record_success", killed)
        with pytest.raises(SystemExit):
            operator_actions.perform(action.pk)
    later = UNTIL + timedelta(seconds=actions.config()["lease"] + 1)
    with clock.virtual_clock(later):
        assert actions.requeue_due_actions(later) == 1
        assert operator_actions.perform(action.pk) == "succeeded"

    first, again = receiver.requests
    for request in (first, again):
        # The key, in the header and in the body; each send signed when it is sent.
        assert request.headers[signing.IDEMPOTENCY_HEADER] == action.sent_key
        assert json.loads(request.body)["action"]["idempotency_key"] == action.sent_key
        signing.verify(SECRET, request.body, request.headers[signing.HEADER])
    assert json.loads(again.body) == json.loads(first.body)
    assert len(receiver.deliveries) == 1
    action.refresh_from_db()
    assert (action.attempts, action.response["duplicate"]) == (2, True)


# --- failures ------------------------------------------------------------------------


def test_a_503_is_retryable_and_records_no_delivery(receiver):
    receiver.fail_next(1, status=503)
    connector = webhook(receiver.url)

    with pytest.raises(ConnectorError) as caught:
        connector.perform(outgoing(), timeout=5)

    assert caught.value.retryable is True
    assert "webhook answered 503" in str(caught.value)
    assert receiver.deliveries == []
    assert connector.perform(outgoing(), timeout=5).duplicate is False  # the retry lands


@pytest.mark.parametrize("status", [408, 425, 429, 500, 502, 503, 504])
def test_statuses_that_mean_not_now_are_retryable(receiver, status):
    receiver.refuse(status)

    with pytest.raises(ConnectorError) as caught:
        webhook(receiver.url).perform(outgoing(), timeout=5)

    assert caught.value.retryable is True


@pytest.mark.parametrize("status", [400, 403, 404, 409, 410, 422])
def test_statuses_that_mean_no_are_not_retryable(receiver, status):
    receiver.refuse(status)

    with pytest.raises(ConnectorError) as caught:
        webhook(receiver.url).perform(outgoing(), timeout=5)

    assert caught.value.retryable is False


def test_a_422_is_not_retryable_and_says_what_the_receiver_said(receiver):
    receiver.refuse(422, body="thread thread-parent is archived")

    with pytest.raises(ConnectorError) as caught:
        webhook(receiver.url).perform(outgoing(), timeout=5)

    assert caught.value.retryable is False
    assert str(caught.value) == "webhook answered 422: thread thread-parent is archived"
    assert caught.value.detail == "thread thread-parent is archived"


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed(receiver, status):
    with Receiver(secret=SECRET) as elsewhere:
        receiver.refuse(status, body="", headers={"Location": elsewhere.url})

        with pytest.raises(ConnectorError) as caught:
            webhook(receiver.url).perform(outgoing(), timeout=5)

        assert caught.value.retryable is False
        assert "not followed" in str(caught.value)
        assert elsewhere.attempts == 0


def test_a_receiver_slower_than_the_timeout_is_a_retryable_timeout(receiver):
    receiver.hold()
    started = time.monotonic()

    with pytest.raises(ConnectorError) as caught:
        webhook(receiver.url, timeout=1).perform(outgoing(), timeout=5)

    assert caught.value.retryable is True
    assert str(caught.value) == f"webhook {receiver.url} timed out after 1 s"
    assert time.monotonic() - started < 3
    # The receiver took it; only the answer was lost.
    assert receiver.accepted.is_set()
    assert len(receiver.deliveries) == 1


def test_the_callers_timeout_caps_the_configured_one(receiver):
    receiver.hold()
    started = time.monotonic()

    with pytest.raises(ConnectorError, match="timed out after 1 s"):
        webhook(receiver.url, timeout=30).perform(outgoing(), timeout=1)

    assert time.monotonic() - started < 3


def test_a_retry_after_a_lost_answer_is_reported_duplicate(receiver):
    receiver.hold()
    connector = webhook(receiver.url, timeout=1)
    with pytest.raises(ConnectorError):
        connector.perform(outgoing(), timeout=5)

    receipt = connector.perform(outgoing(), timeout=5)

    assert receipt.duplicate is True
    assert len(receiver.deliveries) == 1


def test_a_closed_port_is_a_retryable_connection_error():
    # Bound but not listening: the port stays ours, and a connection to it is refused.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/hook"

        with pytest.raises(ConnectorError) as caught:
            webhook(url).perform(outgoing(), timeout=5)

    assert caught.value.retryable is True
    assert str(caught.value) == f"could not connect to {url}: Connection refused"


def test_connection_errors_do_not_show_query_strings():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        url = f"http://127.0.0.1:{port}/hook?token=hunter2"

        with pytest.raises(ConnectorError) as caught:
            webhook(url).perform(outgoing(), timeout=5)

    assert "hunter2" not in str(caught.value)


def test_a_url_with_credentials_is_refused_without_showing_them():
    with pytest.raises(SettingsError) as caught:
        webhook("http://user:hunter2@127.0.0.1:9/hook")

    assert "hunter2" not in str(caught.value)


# --- the connection test: a signed probe ---------------------------------------------


def test_the_connection_test_posts_a_signed_probe_that_delivers_nothing(receiver):
    answer = webhook(receiver.url).check_connection(timeout=5)

    assert answer.startswith(f"webhook {receiver.url} took a signed probe: answered 200 in ")
    (probe,) = receiver.requests
    assert probe.status == 200 and json.loads(probe.body)["type"] == "supervisor.probe"
    signing.verify(SECRET, probe.body, probe.headers[signing.HEADER])
    assert probe.headers[signing.IDEMPOTENCY_HEADER].startswith("probe-")
    assert receiver.deliveries == []


def test_a_connection_test_with_the_wrong_secret_says_so():
    with (
        Receiver(secret="another-secret-entirely") as other,
        pytest.raises(ConnectorError) as caught,
    ):
        webhook(other.url).check_connection(timeout=5)
    assert str(caught.value).startswith(f"webhook {other.url} refused the signature (401: ")
    assert "same secret" in str(caught.value)


def test_a_connection_test_answered_with_an_error_status_fails_with_it(receiver):
    receiver.fail_next(1, status=503)
    with pytest.raises(ConnectorError) as caught:
        webhook(receiver.url).check_connection(timeout=5)
    assert str(caught.value).startswith(f"webhook {receiver.url} answered 503: ")
    assert "failing on purpose" in str(caught.value)


def test_a_connection_test_to_a_closed_port_fails_with_the_url():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/hook"
        with pytest.raises(ConnectorError) as caught:
            webhook(url).check_connection(timeout=5)
    assert str(caught.value) == f"could not connect to {url}: Connection refused"


def test_a_connection_test_nobody_answers_times_out():
    # Listening but never accepting: the request is sent, no answer ever comes.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/hook"
        started = time.monotonic()
        with pytest.raises(ConnectorError) as caught:
            webhook(url).check_connection(timeout=0.3)
    assert str(caught.value) == f"webhook {url} timed out after 0.3 s"
    assert time.monotonic() - started < 2


def test_the_demo_fleets_receiver_answers_the_probe():
    from supervisor.demo.receiver import Receiver as FleetReceiver

    server = FleetReceiver(("127.0.0.1", 0), SECRET, None, None, None, print)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        assert "took a signed probe: answered 200" in webhook(url).check_connection(timeout=5)
    finally:
        server.shutdown()
        server.server_close()


# --- what is sent --------------------------------------------------------------------


def test_configured_headers_are_sent(receiver):
    headers = {"X-Team": "agents", "Authorization": "Bearer abc"}

    webhook(receiver.url, headers=headers).perform(outgoing(), timeout=5)

    sent = receiver.requests[0].headers
    assert (sent["X-Team"], sent["Authorization"]) == ("agents", "Bearer abc")
    assert sent["User-Agent"] == "Supervisor-webhook/1"
    assert sent["Content-Type"] == "application/json"


def test_a_cancel_is_posted_as_an_action_too(receiver):
    connector = webhook(receiver.url)

    connector.perform(outgoing(kind="cancel", text=None, thread_id="thread-child"), timeout=5)

    assert receiver.deliveries[0]["action"]["kind"] == "cancel"
    assert connector.capabilities().allows("cancel")
    assert connector.capabilities().allows("deliver")


# --- settings ------------------------------------------------------------------------


def test_settings_get_their_defaults():
    settings = WebhookConnector.check_settings({"url": "https://example.com/h", "secret": SECRET})

    assert settings["timeout"] == 10
    assert settings["headers"] == {}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"secret": SECRET}, "url: is required"),
        ({"url": "ftp://example.com", "secret": SECRET}, "url: must start with http://"),
        ({"url": "http://", "secret": SECRET}, "url: names no host"),
        ({"url": "http://example.com:99999/", "secret": SECRET}, "url: is not a valid URL"),
        ({"url": "http://example.com"}, "secret: is required"),
        ({"url": "http://example.com", "secret": "short"}, "secret: must be at least 16"),
        ({"url": "http://a", "secret": SECRET, "timeout": 0}, "timeout: must be between 1"),
        ({"url": "http://a", "secret": SECRET, "timeout": 61}, "timeout: must be between 1"),
        ({"url": "http://a", "secret": SECRET, "timeout": "5"}, "timeout: must be a number"),
        ({"url": "http://a", "secret": SECRET, "timeout": True}, "timeout: must be a number"),
        ({"url": "http://a", "secret": SECRET, "headers": {"X": 1}}, "headers.X: must be a"),
        ({"url": "http://a", "secret": SECRET, "headers": []}, "headers: must be an object"),
        (
            {"url": "http://a", "secret": SECRET, "headers": {"Idempotency-Key": "x"}},
            "headers: Idempotency-Key is set by the connector",
        ),
        (
            {"url": "http://a", "secret": SECRET, "headers": {"X-A": "1\r\nX-B: 2"}},
            "headers: the value of X-A must not contain a line break",
        ),
        (
            {"url": "http://a", "secret": SECRET, "headers": {"X A": "1"}},
            "headers: 'X A' is not a valid header name",
        ),
        ({"url": "http://a", "secret": SECRET, "timout": 5}, "timout: is not a webhook setting"),
        (
            {"url": "https://bot:pw@example.com/h", "secret": SECRET},
            "url: must not carry credentials",
        ),
        (
            {"url": "http://a", "secret": SECRET, "headers": {"X-Team": "agents \u2603"}},
            "headers: the value of X-Team holds U+2603, which a header value cannot carry",
        ),
        (
            {"url": "http://a", "secret": SECRET, "headers": {"X-Team": "a\x00b"}},
            "headers: the value of X-Team holds the control character U+0000",
        ),
    ],
)
def test_bad_settings_name_the_field_and_the_problem(settings, message):
    with pytest.raises(SettingsError) as caught:
        WebhookConnector.check_settings(settings)

    assert str(caught.value).startswith(message)


# --- the receiver itself -------------------------------------------------------------


def test_a_held_request_is_answered_after_release(receiver):
    receiver.hold()
    receipts = []
    sender = threading.Thread(
        target=lambda: receipts.append(
            webhook(receiver.url, timeout=10).perform(outgoing(), timeout=10)
        )
    )
    sender.start()

    assert receiver.accepted.wait(5)
    assert receiver.wait_for_attempts(1, timeout=5)
    time.sleep(0.1)
    assert receipts == []  # still held

    receiver.release()
    sender.join(5)

    assert [r.status for r in receipts] == ["200"]
    assert len(receiver.deliveries) == 1


def test_wait_for_attempts_says_false_when_too_few_arrive(receiver):
    assert receiver.wait_for_attempts(1, timeout=0.1) is False
