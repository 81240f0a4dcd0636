"""Actions performed by real Celery workers, killed with SIGKILL at the two points where
a delivery could be lost or doubled: each ends succeeded with one delivery."""

import os
import signal
import uuid
from pathlib import Path

import pytest

from supervisor.core.access.sources import do_create_source
from supervisor.core.actions.writers import do_request_action
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, Task, Wake
from tests.support.receiver import Receiver
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario
from tests.support.workers import celery_worker, purge_broker, wait_for

pytestmark = pytest.mark.slow

SECRET = "a-test-secret-of-some-length"
SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))
TASK = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
# A short lease so the sweep takes a dead worker's action back within the test.
FAST = {"SUPERVISOR_ACTION_LEASE": "3", "SUPERVISOR_SWEEP_INTERVAL": "0.5"}


@pytest.fixture
def delivery(transactional_db):
    purge_broker()
    with Receiver(secret=SECRET) as receiver:
        source, _ = do_create_source("t3", scopes="ingest,read,act")
        source.connector = "webhook"
        source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 20}
        source.save()
        apply_events(source, SEED000["events"])
        yield receiver, Task.objects.select_related("namespace").get(task_id=TASK)
    purge_broker()


def kill(worker) -> None:
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()


def sweeping_worker():
    return celery_worker("--beat", "--schedule", f"/tmp/beat-{uuid.uuid4().hex}", env=FAST)


def test_killed_after_the_receiver_accepted_and_before_success_was_recorded(delivery):
    receiver, task = delivery
    receiver.hold()
    with celery_worker(env=FAST) as worker:
        action, _ = do_request_action(task, "deliver", actor="user:op")
        assert receiver.accepted.wait(30), "the delivery never reached the receiver"
        kill(worker)
    receiver.release()
    action.refresh_from_db()
    assert action.state == "sending" and len(receiver.deliveries) == 1

    with sweeping_worker():
        wait_for(
            lambda: Action.objects.get(pk=action.pk).state == "succeeded",
            what="the swept action to succeed",
        )
    action.refresh_from_db()
    assert action.attempts == 2 and action.response["duplicate"] is True
    assert len(receiver.deliveries) == 1 and receiver.attempts == 2
    assert Wake.objects.filter(source_kind="manual", source_task=TASK).count() == 1


def test_killed_after_claiming_and_before_sending(delivery, tmp_path):
    receiver, task = delivery
    paused = Path(tmp_path) / "paused"
    with celery_worker(
        "--include",
        "tests.support.action_pause",
        env={**FAST, "SUPERVISOR_TEST_PAUSE_FILE": str(paused)},
    ) as worker:
        action, _ = do_request_action(task, "deliver", actor="user:op")
        wait_for(paused.exists, what="the worker to claim the action")
        kill(worker)
    action.refresh_from_db()
    assert action.state == "sending" and action.attempts == 1 and receiver.attempts == 0

    with sweeping_worker():
        wait_for(
            lambda: Action.objects.get(pk=action.pk).state == "succeeded",
            what="the swept action to succeed",
        )
    action.refresh_from_db()
    assert action.attempts == 2 and action.response["duplicate"] is False
    assert len(receiver.deliveries) == 1 and receiver.attempts == 1
    assert Wake.objects.filter(source_kind="manual", source_task=TASK).count() == 1
