"""A notification that can never be sent fails, with its reason, instead of being
retried for ever: a redirect (never followed: it would re-post the message and its
signed links elsewhere), a refusal that will not change (4xx other than 408/429). One
that may pass later (5xx, 429, no answer) is retried, a bounded number of times. Real
HTTP receivers on loopback."""

from datetime import timedelta

import pytest

from supervisor.core.changes import ChangeKind
from supervisor.core.models import Change
from supervisor.jobs import notifications
from supervisor.notify import outbox
from supervisor.notify.channels import do_send_test
from supervisor.notify.models import Channel, Notification
from tests.support.alert_receivers import HttpReceiver, SmtpReceiver
from tests.support.alerts import T0


@pytest.fixture
def http(db):
    with HttpReceiver() as receiver:
        yield receiver


def channel_to(http, url: str) -> Channel:
    return Channel.objects.create(name="hook", kind="apprise", target=url.format(port=http.port))


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize(
    "url, path",
    [
        ("json://127.0.0.1:{port}/hook", "/hook"),
        ("json://127.0.0.1:{port}/hook?redirect=yes", "/hook"),  # the URL cannot turn it on
        ("ntfy://127.0.0.1:{port}/ops", "/"),
    ],
)
def test_a_redirect_is_not_followed_and_fails_the_notification(http, url, path, status):
    http.redirects[path] = (status, f"http://127.0.0.1:{http.port}/elsewhere")
    note = do_send_test(channel_to(http, url), T0)
    state = notifications.perform(note.pk)
    assert http.paths == [path]  # nothing reached /elsewhere
    assert state == "failed"
    note.refresh_from_db()
    assert note.attempts == 1
    assert f"answered a redirect (HTTP {status}), which is not followed" in note.last_error
    assert "127.0.0.1" not in note.last_error  # the URL is a secret


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 413])
def test_a_refusal_that_will_not_change_fails_at_once_with_its_status(http, status):
    http.status = status
    note = do_send_test(channel_to(http, "json://127.0.0.1:{port}/hook"), T0)
    assert notifications.perform(note.pk) == Notification.FAILED
    note.refresh_from_db()
    assert note.last_error == f"channel hook: the service refused the message (HTTP {status})"
    failed = Change.objects.get(kind=ChangeKind.NOTIFICATION_FAILED)
    assert failed.payload["notification"] == note.pk and "HTTP" in failed.payload["error"]


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503])
def test_a_refusal_that_may_pass_is_retried_until_the_attempts_are_spent(http, settings, status):
    settings.SUPERVISOR_NOTIFY = {**settings.SUPERVISOR_NOTIFY, "max_attempts": 3}
    http.status = status
    note = do_send_test(channel_to(http, "json://127.0.0.1:{port}/hook"), T0)
    assert notifications.perform(note.pk) == Notification.FAILING
    assert notifications.perform(note.pk) == Notification.FAILING
    assert notifications.perform(note.pk) == Notification.FAILED
    assert notifications.perform(note.pk) == "skipped"  # nothing is sent a fourth time
    assert len(http.paths) == 3
    note.refresh_from_db()
    assert note.attempts == 3
    assert note.last_error == (
        f"gave up after 3 attempts: channel hook: the service refused the message (HTTP {status})"
    )


def test_no_answer_at_all_is_retried_too(db, settings):
    settings.SUPERVISOR_NOTIFY = {**settings.SUPERVISOR_NOTIFY, "max_attempts": 2}
    channel = Channel.objects.create(name="down", kind="apprise", target="json://127.0.0.1:9/x")
    note = do_send_test(channel, T0)
    assert notifications.perform(note.pk) == Notification.FAILING
    assert notifications.perform(note.pk) == Notification.FAILED
    note.refresh_from_db()
    assert (
        note.last_error
        == "gave up after 2 attempts: channel down: the service did not accept the message"
    )


def test_the_sweep_fails_a_send_whose_last_attempt_never_finished(http, settings):
    settings.SUPERVISOR_NOTIFY = {**settings.SUPERVISOR_NOTIFY, "max_attempts": 1}
    note = do_send_test(channel_to(http, "json://127.0.0.1:{port}/hook"), T0)
    assert outbox.do_claim_notification(note.pk, T0) is not None  # then the worker "dies"
    assert outbox.requeue_due_notifications(T0 + timedelta(seconds=61)) == 0
    note.refresh_from_db()
    assert note.state == Notification.FAILED
    assert note.last_error.startswith("gave up after 1 attempt")
    assert notifications.perform(note.pk) == "skipped" and http.paths == []


def test_send_again_gives_a_failed_notification_its_attempts_back(http):
    http.status = 404
    note = do_send_test(channel_to(http, "json://127.0.0.1:{port}/hook"), T0)
    assert notifications.perform(note.pk) == Notification.FAILED
    http.status = 200  # the admin fixed the channel
    assert outbox.do_retry_now(note, T0 + timedelta(minutes=5))
    note.refresh_from_db()
    assert (note.state, note.attempts) == (Notification.PENDING, 0)
    assert "HTTP 404" in note.last_error  # kept until the next attempt says otherwise
    assert notifications.perform(note.pk) == Notification.SENT
    assert http.keys == [note.key]


class AnsweringSmtp(SmtpReceiver):
    """A real SMTP server that answers every message's DATA with `answer`."""

    answer = "250 OK"

    async def handle_DATA(self, server, session, envelope):
        return self.answer


@pytest.mark.parametrize(
    "answer, state",
    [
        ("550 5.7.1 message refused", Notification.FAILED),
        ("451 4.3.0 try again later", Notification.FAILING),
    ],
)
def test_an_smtp_refusal_fails_for_good_only_when_permanent(db, settings, answer, state):
    with AnsweringSmtp() as smtp:
        smtp.answer = answer
        settings.MAILERS = {
            "default": {
                "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "OPTIONS": {"host": "127.0.0.1", "port": smtp.port, "timeout": 5},
            }
        }
        channel = Channel.objects.create(name="mail", kind="email", target="ops@example.com")
        note = do_send_test(channel, T0)
        assert notifications.perform(note.pk) == state
    note.refresh_from_db()
    assert note.last_error == f"channel mail: SMTP {answer[:3]}"
