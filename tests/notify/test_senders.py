"""Messages reach real receivers on loopback (Apprise JSON, ntfy, SMTP), carry their
key, never carry a secret from a child's text, and a failed send is retried."""

from datetime import timedelta

from supervisor.core.ingest.apply import apply_events
from supervisor.jobs import notifications
from supervisor.notify import outbox
from supervisor.notify.channels import do_send_test
from supervisor.notify.grouping import close_windows
from supervisor.notify.models import Channel, Notification
from tests.support.alerts import T0, open_flag, send_all
from tests.support.factories import task_events

PLANTED = [
    "sk-proj-Zq8XwV7uT6sR5qP4oN3m",
    "hunter2-planted",
    "ghp_PLANTEDplantedPLANTEDplanted1234",
]


def planted_task(source) -> None:
    """A child whose latest result and whose handed text hold secrets."""
    events = task_events(0)
    for event in events:
        if event["type"] == "run.finished":
            event["data"]["summary"] = f"done; I used {PLANTED[0]} and password={PLANTED[1]}"
        if event["type"] == "wake.queued":
            event["data"]["summary"] = f"interim, token: {PLANTED[2]}"
    apply_events(source, events)


def test_each_receiver_gets_the_message_once_with_its_key(source, receivers):
    http, smtp = receivers
    planted_task(source)
    open_flag(source, 0, T0)
    close_windows(T0 + timedelta(seconds=31))
    send_all()
    keys = set(Notification.objects.values_list("key", flat=True))
    assert len(keys) == 3
    assert set(http.keys) | set(smtp.keys) == keys and len(http.raw) == 2 and len(smtp.raw) == 1
    assert sorted(http.paths) == ["/", "/hook"]  # ntfy posts to its server's root
    assert smtp.headers[0]["X-Supervisor-Key"] in keys
    assert "Stale result handed on: Task 0" in smtp.raw[0]


def test_a_secret_planted_in_a_childs_text_never_reaches_a_receiver(source, receivers):
    http, smtp = receivers
    planted_task(source)
    open_flag(source, 0, T0)
    close_windows(T0 + timedelta(seconds=31))
    send_all()
    received = "\n".join(http.raw + smtp.raw)
    assert "[redacted]" in received and "Latest result: done; I used" in received
    assert not any(secret in received for secret in PLANTED)


def test_a_failed_send_is_kept_failing_then_retried_until_sent(source, receivers):
    http, _ = receivers
    http.status = 503
    channel = Channel.objects.get(name="json")
    note = do_send_test(channel, T0)
    assert notifications.perform(note.pk) == "failing"
    note.refresh_from_db()
    assert note.attempts == 1 and note.last_error and note.state == "failing"
    http.status = 200
    assert notifications.perform(note.pk) == "sent"
    assert http.keys == [note.key]


def test_the_same_key_is_written_once(source, receivers):
    channel = Channel.objects.get(name="json")
    message = outbox.Message("s", "b")
    first = outbox.do_enqueue_notification("k:1", channel, "test", [], message, T0)
    again = outbox.do_enqueue_notification("k:1", channel, "test", [], message, T0)
    assert first is not None and again is None
    assert Notification.objects.count() == 1


def test_the_sweep_takes_back_a_send_whose_worker_died(source, receivers):
    channel = Channel.objects.get(name="json")
    note = do_send_test(channel, T0)
    assert outbox.do_claim_notification(note.pk, T0) is not None  # then the worker "dies"
    assert outbox.requeue_due_notifications(T0 + timedelta(seconds=30)) == 0  # lease holds
    assert outbox.requeue_due_notifications(T0 + timedelta(seconds=61)) == 1
    note.refresh_from_db()
    assert note.state == "pending"


def test_a_channel_shows_its_scheme_and_host_only(db):
    channel = Channel(kind="apprise", target="slack://T000/B000/XXXSECRET?footer=no")
    assert channel.masked() == "slack://t000…"
    mail = Channel(kind="email", target="a@example.com, b@corp.io")
    assert mail.masked() == "email to …@corp.io, …@example.com"
