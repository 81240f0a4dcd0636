"""The evaluation job skips what was judged since its events: under a backlog, the jobs
queued for busy subjects cost nothing once a later one has judged them."""

from datetime import timedelta

import pytest
import time_machine

from supervisor.core import clock
from supervisor.core.detection.evaluate import out_of_date
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Task, Thread
from supervisor.jobs.evaluation import evaluate_touched
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db

SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))["events"]
RETRY_PORT = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"


def evaluated_at() -> dict:
    return dict(Task.objects.values_list("task_id", "evaluated_at")) | dict(
        Thread.objects.values_list("thread_id", "evaluated_at")
    )


def test_a_job_for_subjects_judged_since_their_last_event_does_nothing(source):
    start = clock.now()
    with time_machine.travel(start, tick=False):
        result = apply_events(source, SEED000)
    tasks, threads = sorted(result.touched_tasks), sorted(result.touched_threads)
    assert out_of_date(source.namespace_id, tasks, threads) == (set(tasks), set(threads))
    with time_machine.travel(start + timedelta(seconds=1), tick=False):
        evaluate_touched(source.namespace_id, tasks, threads)
    judged = evaluated_at()
    opened = Flag.objects.count()
    assert judged[RETRY_PORT] == start + timedelta(seconds=1) and opened

    # The same job again (a backlog's older copy): nothing is out of date, nothing runs.
    assert out_of_date(source.namespace_id, tasks, threads) == (set(), set())
    with time_machine.travel(start + timedelta(seconds=2), tick=False):
        evaluate_touched(source.namespace_id, tasks, threads)
    assert evaluated_at() == judged and Flag.objects.count() == opened

    # An event after that judgement makes its subjects out of date again.
    activity = {
        "id": "late-activity",
        "type": "run.activity",
        "at": SEED000[-1]["at"],
        "data": {"thread": "thread:child-retry-port", "run": "run:x"},
    }
    with time_machine.travel(start + timedelta(seconds=3), tick=False):
        later = apply_events(source, [activity])
    assert out_of_date(source.namespace_id, later.touched_tasks, later.touched_threads)[1]
    # An id with no row yet is kept: there is nothing to tell it was judged.
    assert out_of_date(source.namespace_id, ["task:unknown"], []) == ({"task:unknown"}, set())
