"""An evaluation that takes its time while a batch is being written, and reads before
the batch commits, must not count as having judged it: the batch's subjects get a
last_event_at from after the commit, which such an evaluation cannot be later than."""

from datetime import timedelta

import pytest
import time_machine
from django.db import transaction

from supervisor.core import clock
from supervisor.core.detection.evaluate import out_of_date
from supervisor.core.ingest.apply import apply_events, evaluate_after_commit
from supervisor.core.models import Task
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db(transaction=True)

SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))["events"]
RETRY_PORT = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"


def test_an_evaluation_between_the_write_and_the_commit_leaves_the_batch_out_of_date(source):
    written = clock.now()
    judged, committed = written + timedelta(seconds=1), written + timedelta(seconds=2)
    with time_machine.travel(written, tick=False) as traveller, transaction.atomic():
        result = apply_events(source, SEED000)  # last_event_at = written
        evaluate_after_commit(source.namespace_id, result)
        # What another worker's evaluation records when it started at `judged` and
        # read the task before this batch committed.
        Task.objects.filter(task_id=RETRY_PORT).update(evaluated_at=judged)
        traveller.move_to(committed)
    task = Task.objects.get(task_id=RETRY_PORT)
    assert task.last_event_at == committed
    tasks, _ = out_of_date(source.namespace_id, sorted(result.touched_tasks), [])
    assert RETRY_PORT in tasks, "the batch's job would skip what the evaluation never saw"
