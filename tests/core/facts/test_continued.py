"""The work a continue starts for task T belongs to T. Supervisor
records the continue it sent as a manual wake of T to the child (contract §4, rule 5),
the orchestrator names that wake in the run it starts, and T owns that run: the stuck
task's flags resolve, and once the run finishes, what is left is to deliver its result."""

import pytest

from supervisor.core import clock
from supervisor.core.actions.writers import do_request_action
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.facts import continued, ownership
from supervisor.core.facts.loader import load_for_task
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Wake
from supervisor.jobs import operator_actions
from tests.support.continued import CHILD, DONE, TASK, at, open_kinds, run_events

pytestmark = pytest.mark.django_db


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
