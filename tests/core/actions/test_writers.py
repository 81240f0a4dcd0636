"""Actions on a task through a real webhook receiver on loopback: preview, request,
perform, retry, refusals, at most one delivery per (task, run), the manual wake."""

from datetime import datetime, timedelta

import pytest

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.actions import writers as actions
from supervisor.core.actions.previews import ActionRefused, preview_action
from supervisor.core.actions.writers import do_request_action
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, Change, Flag, Task, Wake
from supervisor.jobs import operator_actions
from tests.support.receiver import Receiver
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

SECRET = "a-test-secret-of-some-length"
STALE = next(p for p in CONTRACT_SCENARIOS if p.name == "seed000-stale-finalize.json")
TASK = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
DELIVERY_FLAGS = {"premature_completion", "stale_result", "undelivered_result"}


@pytest.fixture
def receiver():
    with Receiver(secret=SECRET) as r:
        yield r


@pytest.fixture
def stale(db, receiver):
    """Seed 000 at its end: a stale result handed on, flagged; the source acts through
    the webhook receiver."""
    source, _ = do_create_source("t3", scopes="ingest,read,act")
    source.connector = "webhook"
    source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 2}
    source.save()
    scenario = load_scenario(STALE)
    apply_events(source, scenario["events"])
    until = datetime.fromisoformat(scenario["until"].replace("Z", "+00:00"))
    evaluate(source.namespace_id, until)
    task = Task.objects.select_related("namespace", "parent_thread").get(task_id=TASK)
    assert set(task.flags.filter(state="open").values_list("kind", flat=True)) == DELIVERY_FLAGS
    return task, until


def open_kinds(task) -> set[str]:
    return set(Flag.objects.filter(task=task, state="open").values_list("kind", flat=True))


def test_deliver_sends_the_latest_result_once_and_resolves_the_delivery_flags(
    stale, receiver, django_capture_on_commit_callbacks
):
    task, until = stale
    with clock.virtual_clock(until + timedelta(minutes=1)):
        preview = preview_action(task, "deliver")
        assert preview.allowed, preview.refusal
        assert preview.target_thread == "thread:parent-release"
        latest = task.child_thread.runs.get(run_id=preview.run).summary
        assert preview.text.endswith(latest)
        assert "delivered by hand via Supervisor" in preview.text
        assert TASK in preview.text
        assert "stale_result" in dict(preview.answers)

        action, created = do_request_action(task, "deliver", actor="user:op", reason="seed 000")
        assert created and action.state == "queued" and action.text == preview.text
        assert operator_actions.perform(action.pk) == "succeeded"

    action.refresh_from_db()
    assert (action.state, action.attempts, action.last_error) == ("succeeded", 1, None)
    assert len(receiver.deliveries) == 1
    sent = receiver.deliveries[0]["action"]
    assert sent["kind"] == "deliver" and sent["text"] == preview.text
    assert sent["thread_id"] == "thread:parent-release" and sent["task_id"] == TASK
    wake = Wake.objects.get(source_kind="manual", source_task=TASK)
    assert wake.thread.thread_id == "thread:parent-release" and wake.summary == preview.text

    evaluate(task.namespace_id, until + timedelta(minutes=2), tasks=[TASK])
    assert not open_kinds(task) & {"stale_result", "undelivered_result"}
    kinds = list(Change.objects.filter(kind__startswith="action.").values_list("kind", flat=True))
    assert kinds == ["action.requested", "action.sending", "action.succeeded"]


def test_a_second_delivery_of_the_run_is_refused_and_the_same_key_is_the_same_action(stale):
    task, until = stale
    with clock.virtual_clock(until):
        first, created = do_request_action(task, "deliver", actor="user:op", key="k-1")
        again, created_again = do_request_action(task, "deliver", actor="user:op", key="k-1")
        assert created and not created_again and again.pk == first.pk
        with pytest.raises(ActionRefused) as refused:
            do_request_action(task, "deliver", actor="user:other")
        assert refused.value.status == 409
        assert "already delivered" in str(refused.value)
        with pytest.raises(ActionRefused) as misused:
            do_request_action(task, "cancel", actor="user:op", key="k-1")
        assert misused.value.status == 409
    assert Action.objects.count() == 1


def test_a_passing_error_is_retried_with_backoff_then_succeeds(stale, receiver):
    task, until = stale
    receiver.fail_next(1, status=503)
    with clock.virtual_clock(until):
        action, _ = do_request_action(task, "deliver", actor="user:op")
        assert operator_actions.perform(action.pk) == "queued"
        action.refresh_from_db()
        assert action.attempts == 1 and "503" in action.last_error
        assert action.due_at > until
        assert operator_actions.perform(action.pk) == "succeeded"
    action.refresh_from_db()
    assert action.attempts == 2 and action.state == "succeeded"
    assert len(receiver.deliveries) == 1 and receiver.attempts == 2
    assert Change.objects.filter(kind="action.retrying").count() == 1


def test_a_refusal_fails_the_action_and_a_failed_delivery_may_be_asked_again(stale, receiver):
    task, until = stale
    receiver.refuse(status=422, body="thread is archived")
    with clock.virtual_clock(until):
        action, _ = do_request_action(task, "deliver", actor="user:op")
        assert operator_actions.perform(action.pk) == "failed"
        action.refresh_from_db()
        assert "422" in action.last_error and "thread is archived" in action.last_error
        assert not Wake.objects.filter(source_kind="manual").exists()
        retry, created = do_request_action(task, "deliver", actor="user:op")
    assert created and retry.pk != action.pk and retry.run_id == action.run_id


def test_retries_stop_after_the_last_attempt(stale, receiver, settings):
    settings.SUPERVISOR_ACTIONS = {**settings.SUPERVISOR_ACTIONS, "max_attempts": 2}
    task, until = stale
    receiver.fail_next(5, status=503)
    with clock.virtual_clock(until):
        action, _ = do_request_action(task, "deliver", actor="user:op")
        assert operator_actions.perform(action.pk) == "queued"
        assert operator_actions.perform(action.pk) == "failed"
        assert operator_actions.perform(action.pk) == "skipped"
    assert receiver.attempts == 2


def test_a_claimed_action_is_not_sent_twice_until_its_lease_runs_out(stale, receiver):
    task, until = stale
    with clock.virtual_clock(until):
        action, _ = do_request_action(task, "deliver", actor="user:op")
        assert actions.do_claim_action(action.pk, until) is not None
        assert operator_actions.perform(action.pk) == "skipped"  # another worker holds it
        assert actions.requeue_due_actions(until) == 0
    lease_over = until + timedelta(seconds=actions.config()["lease"] + 1)
    with clock.virtual_clock(lease_over):
        assert actions.requeue_due_actions(lease_over) == 1
        assert Action.objects.get(pk=action.pk).state == "queued"
        assert actions.requeue_due_actions(lease_over) == 0  # pushed to later first
        assert operator_actions.perform(action.pk) == "succeeded"
    assert Action.objects.get(pk=action.pk).attempts == 2
    assert len(receiver.deliveries) == 1


def test_previews_say_why_not(stale):
    task, until = stale
    assert preview_action(task, "explode").status == 400
    not_owned = preview_action(task, "deliver", run="thread:someone-else:run:1")
    assert not_owned.status == 400 and "not owned" in not_owned.refusal
    source = task.namespace.sources.get()
    source.connector = ""
    source.save()
    unbound = preview_action(task, "deliver")
    assert "has a connector" in unbound.refusal
    with pytest.raises(ActionRefused):
        do_request_action(task, "deliver", actor="user:op")
    assert not Action.objects.exists()


def child_run_under_way(task: Task, until) -> str:
    """A new run of the task's child, started and not finished (a continue's, say)."""
    child = task.child_thread.thread_id
    run = f"{child}#under-way"
    at = (until - timedelta(minutes=1)).isoformat().replace("+00:00", "Z")
    events = [
        {
            "id": "under-way-requested",
            "type": "run.requested",
            "at": at,
            "data": {"thread": child, "run": run, "ordinal": 9, "trigger": {"kind": "other"}},
        },
        {
            "id": "under-way-started",
            "type": "run.started",
            "at": at,
            "data": {"thread": child, "run": run},
        },
    ]
    assert not apply_events(task.namespace.sources.get(), events).rejected
    return run


def test_cancel_of_a_finished_task_with_nothing_under_way_is_refused(stale, receiver):
    # The field's report: cancel was offered on a task that had completed, and confirming
    # it "cancelled" a finished task.
    task, until = stale
    with clock.virtual_clock(until):
        preview = preview_action(task, "cancel")
        assert preview.refusal == (
            "the task has finished (completed) and no run of its child is under way: there "
            "is nothing to cancel"
        )
        with pytest.raises(ActionRefused):
            do_request_action(task, "cancel", actor="user:op")
    assert receiver.deliveries == []


def test_continue_and_cancel_target_the_child(stale, receiver):
    task, until = stale
    child = task.child_thread.thread_id
    run = child_run_under_way(task, until)
    with clock.virtual_clock(until):
        cont = preview_action(task, "continue")
        assert cont.target_thread == child and "Continue the task" in cont.text
        own = preview_action(task, "continue", message="  go on with the port  ")
        assert own.text == "go on with the port"
        cancel = preview_action(task, "cancel")
        assert cancel.target_thread == child and cancel.text is None and cancel.run == run
        action, _ = do_request_action(task, "cancel", actor="source:t3", reason="duplicate")
        assert operator_actions.perform(action.pk) == "succeeded"
    sent = receiver.deliveries[0]["action"]
    assert (sent["kind"], sent["thread_id"], sent["actor"]) == ("cancel", child, "source:t3")
    assert not Wake.objects.filter(source_kind="manual").exists()


def test_the_simulated_orchestrator_answers_each_action(stale):
    """Through the simulator connector, in process: deliver wakes the parent, continue
    wakes the child with a run the task owns, cancel interrupts the child's run and
    reports it cancelled."""
    task, until = stale
    source = task.namespace.sources.get()
    source.connector, source.connector_settings = "simulator", {}
    source.save()
    child = task.child_thread
    child_run_under_way(task, until)  # what cancel stops
    runs_before = child.runs.count()
    with clock.virtual_clock(until + timedelta(minutes=1)):
        for kind in ("deliver", "continue", "cancel"):
            action, _ = do_request_action(task, kind, actor="user:op")
            assert operator_actions.perform(action.pk) == "succeeded", kind
    # The simulator reports the wake Supervisor records: one delivery, one wake.
    [manual] = Wake.objects.filter(
        source_kind="manual", source_task=TASK, thread__thread_id="thread:parent-release"
    )
    assert manual.delivered_event is not None
    # The continue is a manual wake of the task to its child, which wakes the child's run.
    [woken] = Wake.objects.filter(source_kind="manual", source_task=TASK, thread=child)
    assert child.runs.filter(trigger_kind="wake", trigger_ref=woken.wake_id).count() == 1
    assert child.runs.count() == runs_before + 1
    task.refresh_from_db()
    assert task.status == "cancelled"
