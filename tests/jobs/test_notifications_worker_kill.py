"""A real Celery worker killed (SIGKILL) in the middle of a send: after a restart every
notification is sent, and the receiver, after its own dedupe, has each key once."""

import os
import signal
import uuid
from datetime import timedelta

import pytest

from supervisor.core import clock
from supervisor.notify.channels import do_send_test
from supervisor.notify.grouping import close_windows
from supervisor.notify.models import Channel, Notification, Route
from tests.support.alert_receivers import HttpReceiver
from tests.support.alerts import open_flag
from tests.support.factories import make_tasks
from tests.support.workers import celery_worker, purge_broker, wait_for

pytestmark = pytest.mark.slow

# A short lease so the sweep takes a dead worker's send back within the test.
FAST = {"SUPERVISOR_NOTIFY_LEASE": "3", "SUPERVISOR_SWEEP_INTERVAL": "0.5"}


@pytest.fixture
def receiver(transactional_db, source):
    purge_broker()
    with HttpReceiver() as http:
        channel = Channel.objects.create(
            name="json", kind="apprise", target=f"json://127.0.0.1:{http.port}/hook"
        )
        Route.objects.create(channel=channel, group_window=30)
        make_tasks(source, 3)
        yield http, channel
    purge_broker()


def test_killed_mid_send_loses_nothing_and_no_key_arrives_twice_after_dedupe(receiver, source):
    http, channel = receiver
    http.hold()
    with celery_worker(env=FAST) as worker:
        held = do_send_test(channel, clock.now())
        assert http.accepted.wait(30), "the send never reached the receiver"
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    http.release()
    held.refresh_from_db()
    assert held.state == "sending"
    # While no worker runs, flags open and their burst's window closes.
    now = clock.now()
    for n in range(3):
        open_flag(source, n, now)
    assert close_windows(now + timedelta(seconds=31)) == 1

    beat = ("--beat", "--schedule", f"/tmp/beat-{uuid.uuid4().hex}")
    with celery_worker(*beat, env=FAST):
        wait_for(
            lambda: not Notification.objects.exclude(state="sent").exists(),
            what="every notification to be sent",
        )
    keys = set(Notification.objects.values_list("key", flat=True))
    assert len(keys) == 2 and set(http.by_key) == keys
    assert http.keys.count(held.key) == 2  # sent again after the kill: at least once
    held.refresh_from_db()
    assert held.attempts == 2
