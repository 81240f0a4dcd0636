"""Detection run by real Celery workers on the real broker."""

import os
import signal
import uuid

import pytest
import redis
from django.db import IntegrityError, transaction
from django.utils import timezone

from supervisor.core.detection.sweep import due_subjects
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag
from supervisor.jobs.evaluation import evaluate_touched
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario
from tests.support.workers import celery_worker, purge_broker, wait_for

SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))
RETRY_PORT = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
EXPECTED = {"premature_completion", "stale_result", "undelivered_result"}


def open_kinds():
    return set(
        Flag.objects.filter(subject_id=RETRY_PORT, state="open").values_list("kind", flat=True)
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_sweep_opens_the_flag_when_the_worker_died_before_evaluating(client, source):
    purge_broker()
    with celery_worker() as worker:
        os.kill(worker.pid, signal.SIGSTOP)  # it takes nothing from now on
        response = client.post(
            "/api/v1/events",
            SEED000,
            content_type="application/json",
            headers={"Authorization": f"Bearer {source.token}"},
        )
        assert response.json()["accepted"] == len(SEED000["events"])
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    # Had the worker taken the message before dying, the filesystem broker would have
    # deleted it and Redis would hold it until its visibility timeout: it is lost either way.
    purge_broker()
    assert not Flag.objects.exists()
    assert RETRY_PORT in due_subjects(timezone.now())[source.namespace_id][0]
    with celery_worker(
        "--beat",
        "--schedule",
        f"/tmp/beat-{uuid.uuid4().hex}",
        env={"SUPERVISOR_SWEEP_INTERVAL": "0.5"},
    ):
        wait_for(lambda: open_kinds() == EXPECTED, what="the sweep to open the flags")
    for kind in EXPECTED:
        assert Flag.objects.filter(subject_id=RETRY_PORT, kind=kind).count() == 1


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_two_workers_on_one_snapshot_open_each_flag_once(source):
    purge_broker()
    result = apply_events(source, SEED000["events"])  # ingested, not yet evaluated
    key = f"supervisor-test-barrier-{uuid.uuid4().hex}"
    url = os.environ["CELERY_BROKER_URL"]
    env = {"SUPERVISOR_TEST_BARRIER_URL": url, "SUPERVISOR_TEST_BARRIER_KEY": key}
    include = ("--include", "tests.support.worker_barrier", "--prefetch-multiplier", "1")
    with celery_worker(*include, env=env) as first, celery_worker(*include, env=env) as second:
        for _ in range(2):
            evaluate_touched.delay(
                source.namespace_id, sorted(result.touched_tasks), sorted(result.touched_threads)
            )
        barrier = redis.Redis.from_url(url)
        wait_for(lambda: int(barrier.get(key) or 0) >= 2, what="both workers at the barrier")
        wait_for(
            lambda: all("succeeded" in w.log.read_text() for w in (first, second)),
            what="both evaluations to finish",
        )
    assert open_kinds() == EXPECTED
    for kind in EXPECTED:
        assert Flag.objects.filter(subject_id=RETRY_PORT, kind=kind).count() == 1


@pytest.mark.django_db
def test_the_database_refuses_a_second_open_flag_for_one_subject_and_kind(source):
    opened = {
        "namespace_id": source.namespace_id,
        "subject_type": "task",
        "subject_id": "task:x",
        "kind": "stuck",
        "state": "open",
        "opened_at": "2026-11-05T22:00:00Z",
    }
    Flag.objects.create(**opened)
    with pytest.raises(IntegrityError), transaction.atomic():
        Flag.objects.create(**opened)
    Flag.objects.create(**{**opened, "state": "resolved"})  # history is not limited
