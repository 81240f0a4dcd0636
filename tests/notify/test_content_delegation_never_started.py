"""An alert goes out for a delegation that never started: a warning about
the parent thread, with the kind's title, meaning and advice."""

from datetime import timedelta

import pytest

from supervisor.core.models import Flag, Thread
from supervisor.jobs import notifications
from supervisor.notify.content import base_url
from supervisor.notify.grouping import close_windows
from supervisor.notify.models import Channel, Notification, Route
from tests.support.alert_receivers import HttpReceiver
from tests.support.scenarios import load_own


@pytest.fixture
def receiver(db):
    with HttpReceiver() as http:
        channel = Channel.objects.create(
            name="json", kind="apprise", target=f"json://127.0.0.1:{http.port}/hook"
        )
        Route.objects.create(channel=channel, group_window=30)
        yield http


def test_an_alert_names_the_parent_thread_and_the_hung_request(source, receiver):
    load_own(source, "delegation-never-started.json")
    flag = Flag.objects.get(kind="delegation_never_started", state=Flag.OPEN)
    close_windows(flag.opened_at + timedelta(seconds=31))
    notes = list(Notification.objects.all())
    assert notes, "no alert was queued for the flag"
    for note in notes:
        assert notifications.perform(note.pk) == "sent", note.last_error
    received = "\n".join(receiver.raw)
    assert "Delegation never started" in received
    assert "thread:dns-lead" in received
    assert "[warning] Delegation never started: thread:dns-lead" in received
    assert "Suggested: Look at the parent" in received


def test_a_thread_flags_alert_says_its_evidence_and_links_the_thread(source, receiver):
    """A flag on a thread has no task whose texts the alert could quote: it says the
    flag's evidence (which request hangs, since when) and links the thread's page (it
    said neither, and its "Task:" link opened the overview)."""
    load_own(source, "delegation-never-started.json")
    flag = Flag.objects.get(kind="delegation_never_started", state=Flag.OPEN)
    thread = Thread.objects.get(namespace=source.namespace, thread_id="thread:dns-lead")
    close_windows(flag.opened_at + timedelta(seconds=31))
    for note in Notification.objects.all():
        assert notifications.perform(note.pk) == "sent", note.last_error
    received = "\n".join(receiver.raw)
    assert "Evidence: 1 delegation(s) asked for on this thread never started" in received
    assert f"Thread: {base_url()}/threads/{thread.pk}/" in received
    assert "Task: " not in received
