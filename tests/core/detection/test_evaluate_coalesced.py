"""Evaluation jobs coalesce: the first job of a backlog judges what the batches queued
behind it touched, each subject once, and those jobs then cost one query."""

from datetime import timedelta

import pytest
import time_machine

from supervisor.core import clock
from supervisor.core.detection.evaluate import catch_up, out_of_date, pending
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Task
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db

SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))["events"]
RETRY_PORT = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"


def delegated(task_id: str, at: str) -> dict:
    return {
        "id": f"delegated-{task_id}",
        "type": "task.delegated",
        "at": at,
        "data": {
            "task": task_id,
            "parent_thread": f"thread:parent-{task_id}",
            "child_thread": f"thread:child-{task_id}",
            "title": task_id,
            "mode": "async",
            "prompt": "p",
        },
    }


def test_the_first_job_judges_what_later_batches_touched_and_their_jobs_do_nothing(source):
    start = clock.now()
    with time_machine.travel(start, tick=False):
        first = apply_events(source, SEED000)
        second = apply_events(source, [delegated("task:other", SEED000[-1]["at"])])
    assert "task:other" in pending(source.namespace_id)[0]

    with time_machine.travel(start + timedelta(seconds=1), tick=False):
        judged = catch_up(
            source.namespace_id, clock.now(), first.touched_tasks, first.touched_threads
        )
    # The second batch's subjects were judged by the first batch's job...
    assert judged >= len(first.touched_tasks) + len(second.touched_tasks)
    assert pending(source.namespace_id) == (set(), set())
    assert Task.objects.get(task_id="task:other").evaluated_at == start + timedelta(seconds=1)
    assert Flag.objects.filter(subject_id=RETRY_PORT, state="open").exists()
    # ...so the second batch's own job finds nothing left to do.
    opened = Flag.objects.count()
    with time_machine.travel(start + timedelta(seconds=2), tick=False):
        assert (
            catch_up(source.namespace_id, clock.now(), second.touched_tasks, second.touched_threads)
            == 0
        )
    assert Task.objects.get(task_id="task:other").evaluated_at == start + timedelta(seconds=1)
    assert Flag.objects.count() == opened


def test_a_job_takes_at_most_one_pass_of_the_backlog_beside_its_own(source, monkeypatch):
    monkeypatch.setattr("supervisor.core.detection.evaluate.PASS", 1)
    start = clock.now()
    with time_machine.travel(start, tick=False):
        apply_events(source, [delegated(f"task:{n}", SEED000[-1]["at"]) for n in range(5)])
        own = apply_events(source, [delegated("task:own", SEED000[-1]["at"])])
    with time_machine.travel(start + timedelta(seconds=1), tick=False):
        catch_up(source.namespace_id, clock.now(), own.touched_tasks, [])
    left, _ = out_of_date(source.namespace_id, [f"task:{n}" for n in range(5)], [])
    assert "task:own" not in pending(source.namespace_id)[0]
    # Five were waiting: one task and one thread were taken with the job's own (and the
    # task a thread belongs to, judged with it); the rest wait for the next job.
    assert len(left) >= 3
