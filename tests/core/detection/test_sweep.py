"""The beat sweep: time-based flags open at their time with nobody watching, and
evaluations that never ran are redone."""

from datetime import timedelta

import pytest
import time_machine

from supervisor.core import clock
from supervisor.core.contract.events import parse_event
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.detection.sweep import due_subjects, sweep
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Task, Thread
from tests.support.factories import BASE, at
from tests.support.scenarios import CONTRACT_SCENARIOS, OWN_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db

SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))["events"]
LAST = max(parse_event(e).at for e in SEED000)  # run 4 of the retry-port task finishes
RETRY_PORT = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"


def open_kinds(subject_id=RETRY_PORT) -> set[str]:
    return set(
        Flag.objects.filter(subject_id=subject_id, state="open").values_list("kind", flat=True)
    )


def ingest_and_evaluate(source, events, when):
    """What the service does for a batch: ingest, then evaluate what it touched."""
    with time_machine.travel(when, tick=False):
        result = apply_events(source, events)
        evaluate(
            source.namespace_id,
            clock.now(),
            tasks=result.touched_tasks,
            threads=result.touched_threads,
        )


def sweep_at(when):
    with time_machine.travel(when, tick=False):
        return sweep(clock.now())


def test_undelivered_result_opens_through_the_sweep_when_its_grace_ends(source):
    ingest_and_evaluate(source, SEED000, LAST)
    assert open_kinds() == {"premature_completion", "stale_result"}
    assert Task.objects.get(task_id=RETRY_PORT).next_check_at == LAST + timedelta(seconds=60)
    sweep_at(LAST + timedelta(seconds=59.9))
    assert "undelivered_result" not in open_kinds()
    sweep_at(LAST + timedelta(seconds=60))
    assert "undelivered_result" in open_kinds()
    assert Flag.objects.get(kind="undelivered_result").opened_at == LAST + timedelta(seconds=60)


def test_a_sweep_with_nothing_due_evaluates_nothing(source):
    ingest_and_evaluate(source, SEED000, LAST)
    assert sweep_at(LAST + timedelta(seconds=30)) == 0


def test_stuck_opens_through_the_sweep_after_stuck_after(source):
    events = [
        {
            "id": "d",
            "type": "task.delegated",
            "at": at(0),
            "data": {
                "task": "task:s",
                "parent_thread": "thread:p",
                "child_thread": "thread:c",
                "title": "Quiet",
                "mode": "async",
            },
        },
        {
            "id": "r",
            "type": "run.requested",
            "at": at(1),
            "data": {
                "thread": "thread:c",
                "run": "c:1",
                "ordinal": 1,
                "trigger": {"kind": "delegation", "task": "task:s"},
            },
        },
        {
            "id": "s",
            "type": "run.started",
            "at": at(2),
            "data": {"thread": "thread:c", "run": "c:1"},
        },
    ]
    ingest_and_evaluate(source, events, BASE + timedelta(seconds=2))
    sweep_at(BASE + timedelta(seconds=2 + 1799))
    assert "stuck" not in open_kinds("task:s")
    sweep_at(BASE + timedelta(seconds=2 + 1800))
    assert "stuck" in open_kinds("task:s")


def test_late_wake_opens_and_resolves_through_sweep_and_delivery(source):
    events = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed002" in p.name))["events"]
    queued = next(e for e in events if e["id"] == "s002-0012")
    delivered = next(e for e in events if e["id"] == "s002-0017")
    before = [e for e in events if e is not delivered]
    ingest_and_evaluate(source, before, parse_event(queued).at)
    a1 = "node:delegated-task:cmd%3Aa1"
    sweep_at(parse_event(queued).at + timedelta(seconds=599))
    assert "late_wake" not in open_kinds(a1)
    sweep_at(parse_event(queued).at + timedelta(seconds=600))
    assert "late_wake" in open_kinds(a1)
    ingest_and_evaluate(source, [delivered], parse_event(delivered).at)
    assert "late_wake" not in open_kinds(a1)


def test_an_evaluation_that_never_ran_is_redone_by_the_sweep(source):
    # A batch whose evaluation job was lost: ingested, never evaluated.
    with time_machine.travel(LAST, tick=False):
        apply_events(source, SEED000)
    assert not Flag.objects.exists()
    tasks, threads = due_subjects(LAST)[source.namespace_id]
    assert RETRY_PORT in tasks and "thread:parent-release" in threads
    sweep_at(LAST + timedelta(seconds=1))
    assert open_kinds() == {"premature_completion", "stale_result"}
    assert due_subjects(LAST + timedelta(seconds=2)) == {}


def test_a_subject_due_by_the_clock_alone_is_judged_by_itself(source):
    """Its neighbours (the parent's other tasks) have their own due times; judging them
    again at every due neighbour's time is what made the sweep grow with the fleet."""
    ingest_and_evaluate(source, SEED000, LAST)
    due = LAST + timedelta(seconds=60)
    tasks, threads = due_subjects(due)[source.namespace_id]
    assert RETRY_PORT in tasks
    before = dict(Task.objects.filter(known=True).values_list("task_id", "evaluated_at"))
    waiting = {task_id for task_id in before if task_id not in tasks}
    assert waiting, "seed 000 has tasks not due at that time"
    assert sweep_at(due) == len(tasks) + len(threads)
    assert "undelivered_result" in open_kinds()
    after = dict(Task.objects.filter(known=True).values_list("task_id", "evaluated_at"))
    assert {t: after[t] for t in waiting} == {t: before[t] for t in waiting}
    assert {after[t] for t in tasks if t in after} == {due}


def test_a_silent_source_with_unfinished_tasks_is_flagged_and_cleared(source):
    events = [
        {
            "id": "d",
            "type": "task.delegated",
            "at": at(0),
            "data": {
                "task": "task:q",
                "parent_thread": "thread:p",
                "child_thread": "thread:c",
                "title": "Long",
                "mode": "async",
            },
        },
        {
            "id": "a",
            "type": "run.activity",
            "at": at(1),
            "data": {"thread": "thread:c", "run": "c:1"},
        },
    ]
    ingest_and_evaluate(source, events, BASE)
    sweep_at(BASE + timedelta(seconds=899))
    assert not open_kinds(source.name)
    sweep_at(BASE + timedelta(seconds=900))
    flag = Flag.objects.get(subject_type="source", subject_id=source.name, state="open")
    assert flag.kind == "source_silent"
    ingest_and_evaluate(
        source, [{**events[1], "id": "a2", "at": at(960)}], BASE + timedelta(seconds=960)
    )
    sweep_at(BASE + timedelta(seconds=961))
    assert not open_kinds(source.name)


def test_a_silent_source_with_only_finished_tasks_is_not_flagged(source):
    ingest_and_evaluate(source, SEED000, LAST)  # all three tasks are reported completed
    assert set(Task.objects.values_list("status", flat=True)) == {"completed"}
    sweep_at(LAST + timedelta(hours=2))
    assert not open_kinds(source.name)


def test_a_source_may_shorten_its_durations(source):
    source.settings = {"source_silence": 60}
    source.save()
    events = [
        {
            "id": "d",
            "type": "task.delegated",
            "at": at(0),
            "data": {"task": "task:q", "parent_thread": "thread:p", "title": "T", "mode": "async"},
        }
    ]
    ingest_and_evaluate(source, events, BASE)
    sweep_at(BASE + timedelta(seconds=60))
    assert open_kinds(source.name) == {"source_silent"}


def test_delegation_never_started_opens_through_the_sweep_and_its_delegation_resolves_it(
    source,
):
    # The request has its parent thread judged and due at spawn_timeout; the
    # sweep opens the flag then, and the late delegation (a batch of its own) resolves it.
    events = load_scenario(next(p for p in OWN_SCENARIOS if p.stem == "delegation-started-late"))
    events = events["events"]
    request = next(e for e in events if e["type"] == "task.requested")
    delegation = next(e for e in events if e["type"] == "task.delegated")
    asked = parse_event(request).at
    ingest_and_evaluate(source, events[:4], asked)
    lead = "thread:dlate-lead"
    assert Thread.objects.get(thread_id=lead).next_check_at == asked + timedelta(seconds=120)
    sweep_at(asked + timedelta(seconds=119.9))
    assert open_kinds(lead) == set()
    sweep_at(asked + timedelta(seconds=120))
    assert open_kinds(lead) == {"delegation_never_started"}
    ingest_and_evaluate(source, [delegation], parse_event(delegation).at)
    assert open_kinds(lead) == set()
    assert Thread.objects.get(thread_id=lead).next_check_at is None
