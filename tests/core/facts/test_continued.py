"""The work a continue starts for task T belongs to T. Supervisor
records the continue it sent as a manual wake of T to the child (contract §4, rule 5),
the orchestrator names that wake in the run it starts, and T owns that run: the stuck
task's flags resolve, and once the run finishes, what is left is to deliver its result."""

from datetime import UTC, datetime, timedelta

import pytest

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.actions.writers import do_request_action
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.facts import continued, ownership
from supervisor.core.facts.loader import load_for_task
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Task, Wake
from supervisor.jobs import operator_actions
from tests.support.receiver import Receiver
from tests.support.scenarios import OWN_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db

SECRET = "a-test-secret-of-some-length"
LEFT = next(p for p in OWN_SCENARIOS if p.name == "left-by-restart.json")
TASK, CHILD = "task:lr", "thread:lr-child"
DONE = "Watched the deploy to the end: staging is healthy."


def at(minutes: float) -> datetime:
    return datetime(2026, 11, 21, 9, 0, tzinfo=UTC) + timedelta(minutes=minutes)


def open_kinds(task) -> set[str]:
    return set(Flag.objects.filter(task=task, state="open").values_list("kind", flat=True))


def run_events(wake: str, *, finished: bool) -> list[dict]:
    """The child's run as the orchestrator reports it: started by the continue's wake."""
    run = f"{CHILD}~2"
    events = [
        {
            "id": "lr-cont-1",
            "type": "run.requested",
            "at": at(45.1).isoformat(),
            "data": {
                "thread": CHILD,
                "run": run,
                "ordinal": 2,
                "trigger": {"kind": "wake", "wake": wake},
            },
        },
        {
            "id": "lr-cont-2",
            "type": "run.started",
            "at": at(45.2).isoformat(),
            "data": {"thread": CHILD, "run": run},
        },
    ]
    if finished:
        events.append(
            {
                "id": "lr-cont-3",
                "type": "run.finished",
                "at": at(50).isoformat(),
                "data": {"thread": CHILD, "run": run, "status": "completed", "summary": DONE},
            }
        )
    return events


@pytest.fixture
def stuck_task(db):
    with Receiver(secret=SECRET) as receiver:
        source, _ = do_create_source("orch", scopes="ingest,read,act")
        source.connector = "webhook"
        source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 2}
        source.save()
        apply_events(source, load_scenario(LEFT)["events"])
        evaluate(source.namespace_id, at(45))
        task = Task.objects.select_related("namespace").get(task_id=TASK)
        assert open_kinds(task) == {"left_by_restart", "stuck"}
        yield source, task, receiver


def test_a_continue_sent_by_supervisor_makes_the_childs_run_the_tasks_own(stuck_task):
    source, task, receiver = stuck_task
    with clock.virtual_clock(at(45)):
        action, _ = do_request_action(task, "continue", actor="user:op")
        assert operator_actions.perform(action.pk) == "succeeded"
    sent = receiver.deliveries[0]["action"]
    assert sent["kind"] == "continue" and sent["thread_id"] == CHILD
    # Supervisor tells the continue as a manual wake of the task to its child.
    assert sent["wake"] and sent["wake"].startswith("supervisor:continue:")
    wake = Wake.objects.get(wake_id=sent["wake"])
    assert (wake.source_kind, wake.source_task, wake.thread.thread_id) == ("manual", TASK, CHILD)

    apply_events(source, run_events(sent["wake"], finished=False))
    evaluate(source.namespace_id, at(46))
    snap = load_for_task(task)
    view = snap.tasks[TASK]
    run = snap.runs[f"{CHILD}~2"]
    assert (run.trigger_kind, run.trigger_ref) == ("wake", sent["wake"])
    assert ownership.owning(snap, view, run).owned
    assert open_kinds(task) == set()  # stuck and left_by_restart resolve: T's run works
    assert continued.what_continued(snap, view, sent["wake"]).left == continued.WAIT

    apply_events(source, run_events(sent["wake"], finished=True)[2:])
    evaluate(source.namespace_id, at(51))
    snap = load_for_task(task)
    view = snap.tasks[TASK]
    assert ownership.latest_result_run(snap, view).id == f"{CHILD}~2"
    left = continued.what_continued(snap, view, sent["wake"])
    assert left.left == continued.DELIVER and left.deliver_run == f"{CHILD}~2"
    assert "run 2" in left.did and DONE in left.did
    assert CHILD not in left.did + left.left_words  # runs by ordinal, never by raw id
