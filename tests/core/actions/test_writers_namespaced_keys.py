"""The keys and ids Supervisor sends out are
its namespace's, and only what Supervisor sent comes back as Supervisor's.

A real webhook receiver on loopback deduplicates by `Idempotency-Key`, as the README
tells receivers to: the same key asked in two namespaces must reach it as two keys, or
it drops one while Supervisor records success. An action made before keys were
namespaced keeps sending its bare key, and the wake it names is still known when the
orchestrator reports it back. An ingest token cannot post a wake under Supervisor's own
ids, or in its environment, to make a delivery by hand that never happened."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from supervisor.connectors.webhook import signing
from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.actions.writers import do_request_action
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.facts import ownership
from supervisor.core.facts.loader import load_for_task
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, DeadLetter, Flag, Task, Wake
from supervisor.jobs import operator_actions
from tests.support.receiver import Receiver
from tests.support.scenarios import CONTRACT_SCENARIOS, OWN_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db

SECRET = "a-test-secret-of-some-length"
STALE = load_scenario(next(p for p in CONTRACT_SCENARIOS if p.name.startswith("seed000-stale")))
STALE_TASK = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
STALE_UNTIL = datetime.fromisoformat(STALE["until"].replace("Z", "+00:00"))
PARENT = "thread:parent-release"
LEFT = load_scenario(next(p for p in OWN_SCENARIOS if p.name == "left-by-restart.json"))
LEFT_TASK, LEFT_CHILD = "task:lr", "thread:lr-child"
LEFT_AT = datetime(2026, 11, 21, 9, 45, tzinfo=UTC)
ANSWERED_BY_A_DELIVERY = {"stale_result", "undelivered_result"}


@pytest.fixture
def receiver():
    with Receiver(secret=SECRET) as r:
        yield r


def orchestrator(name: str, receiver: Receiver, scenario: dict):
    """A source of its own namespace, acting through the shared receiver, fed `scenario`."""
    source, _ = do_create_source(name, scopes="ingest,read,act")
    source.connector = "webhook"
    source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 2}
    source.save()
    assert not apply_events(source, scenario["events"]).rejected
    return source


def task_of(source, task_id: str) -> Task:
    return Task.objects.select_related("namespace").get(
        namespace_id=source.namespace_id, task_id=task_id
    )


def open_kinds(task: Task) -> set[str]:
    return set(Flag.objects.filter(task=task, state="open").values_list("kind", flat=True))


def manual_wake(event_id: str, wake: str, thread: str, task: str, summary: str, **envelope):
    return {
        "id": event_id,
        "type": "wake.queued",
        "at": (STALE_UNTIL - timedelta(seconds=30)).isoformat(),
        **envelope,
        "data": {
            "wake": wake,
            "thread": thread,
            "source": {"kind": "manual", "task": task},
            "summary": summary,
        },
    }


# --- point 5: one key, two namespaces --------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "task_id", "kind", "at"),
    [(STALE, STALE_TASK, "deliver", STALE_UNTIL), (LEFT, LEFT_TASK, "continue", LEFT_AT)],
    ids=["deliver", "continue"],
)
def test_one_key_in_two_namespaces_reaches_a_receiver_as_two_keys(
    receiver, scenario, task_id, kind, at
):
    sent = []
    for name in ("team-a", "team-b"):
        task = task_of(orchestrator(name, receiver, scenario), task_id)
        with clock.virtual_clock(at):
            action, created = do_request_action(task, kind, actor="user:op", key="k-1")
            assert created
            assert operator_actions.perform(action.pk) == "succeeded"
        action.refresh_from_db()
        assert action.response["duplicate"] is False
        sent.append(action)

    # Both were taken: the receiver, deduplicating by key, saw two keys.
    assert len(receiver.deliveries) == 2
    headers = [r.headers[signing.IDEMPOTENCY_HEADER] for r in receiver.requests]
    bodies = [json.loads(r.body)["action"] for r in receiver.requests]
    assert headers[0] != headers[1]
    assert [b["idempotency_key"] for b in bodies] == headers
    assert [b["namespace"] for b in bodies] == ["team-a", "team-b"]
    assert bodies[0]["wake"] != bodies[1]["wake"]
    for action, header, body in zip(sent, headers, bodies, strict=True):
        assert header == action.sent_key
        assert "k-1" in header  # the client's key is still readable in it
        # Supervisor records the wake it sent under the id it sent.
        wake = Wake.objects.get(namespace_id=action.namespace_id, wake_id=body["wake"])
        assert (wake.source_kind, wake.source_task) == ("manual", task_id)


def test_a_key_cannot_be_chosen_to_meet_another_namespaces_key(receiver):
    """A token that knows another namespace's key scheme cannot send the key it sends."""
    a = task_of(orchestrator("team-a", receiver, STALE), STALE_TASK)
    b = task_of(orchestrator("team-b", receiver, STALE), STALE_TASK)
    with clock.virtual_clock(STALE_UNTIL):
        theirs, _ = do_request_action(a, "deliver", actor="user:op", key="k-1")
        guess, _ = do_request_action(b, "deliver", actor="user:op", key=theirs.sent_key)
        for action in (theirs, guess):
            assert operator_actions.perform(action.pk) == "succeeded"
    assert theirs.sent_key != guess.sent_key
    assert len(receiver.deliveries) == 2


# --- ids already sent, in the old form -------------------------------------------------


def test_an_action_made_before_keeps_its_bare_key_and_its_wake_is_still_known(receiver):
    """An action in flight when keys became namespaced: every send carries the key it
    was first sent with, and the orchestrator's report of the old wake still matches."""
    source = orchestrator("team-a", receiver, LEFT)
    task = task_of(source, LEFT_TASK)
    with clock.virtual_clock(LEFT_AT):
        action, _ = do_request_action(task, "continue", actor="user:op", key="op-continue-1")
        Action.objects.filter(pk=action.pk).update(bare_key=True)  # as migration 0027 left it
        assert operator_actions.perform(action.pk) == "succeeded"
    [request] = receiver.requests
    body = json.loads(request.body)["action"]
    assert request.headers[signing.IDEMPOTENCY_HEADER] == "op-continue-1"
    assert body["wake"] == "supervisor:continue:op-continue-1"

    # The orchestrator reports the wake it queued and the run it started for it.
    reported = [
        {
            **manual_wake(
                "orch-wake", body["wake"], LEFT_CHILD, LEFT_TASK, body["text"], env="default"
            ),
            "at": (LEFT_AT + timedelta(seconds=1)).isoformat(),
        },
        {
            "id": "orch-run",
            "type": "run.requested",
            "at": (LEFT_AT + timedelta(seconds=2)).isoformat(),
            "data": {
                "thread": LEFT_CHILD,
                "run": f"{LEFT_CHILD}~2",
                "ordinal": 2,
                "trigger": {"kind": "wake", "wake": body["wake"]},
            },
        },
    ]
    assert apply_events(source, reported).rejected == []
    snap = load_for_task(task)
    run = snap.runs[f"{LEFT_CHILD}~2"]
    assert ownership.owning(snap, snap.tasks[LEFT_TASK], run).owned


def test_an_old_delivery_wake_reported_back_still_counts_as_the_delivery_by_hand(receiver):
    source = orchestrator("team-a", receiver, STALE)
    task = task_of(source, STALE_TASK)
    evaluate(source.namespace_id, STALE_UNTIL)
    assert open_kinds(task) >= ANSWERED_BY_A_DELIVERY
    with clock.virtual_clock(STALE_UNTIL):
        action, _ = do_request_action(task, "deliver", actor="user:op", key="k-old")
        Action.objects.filter(pk=action.pk).update(bare_key=True)
        assert operator_actions.perform(action.pk) == "succeeded"
    [request] = receiver.requests
    body = json.loads(request.body)["action"]
    assert request.headers[signing.IDEMPOTENCY_HEADER] == "k-old"
    assert body["wake"] == f"supervisor:delivery:{action.pk}"
    # The orchestrator reports the wake it queued for it, under Supervisor's id.
    back = manual_wake("orch-wake", body["wake"], PARENT, STALE_TASK, body["text"])
    assert apply_events(source, [back]).rejected == []

    evaluate(source.namespace_id, STALE_UNTIL + timedelta(minutes=2), tasks=[STALE_TASK])
    assert not open_kinds(task) & ANSWERED_BY_A_DELIVERY


# --- lesser point of 7: a delivery by hand under Supervisor's name ---------------------


def latest_result(task: Task) -> str:
    snap = load_for_task(task)
    return ownership.latest_result_run(snap, snap.tasks[STALE_TASK]).summary


@pytest.mark.parametrize(
    ("wake", "envelope", "field"),
    [
        ("supervisor:delivery:{unknown}", {}, "data.wake"),
        ("supervisor:delivery:{other}", {}, "data.wake"),  # another namespace's action
        ("supervisor:continue:k-1", {}, "data.wake"),
        ("by-hand-1", {"env": "supervisor"}, "env"),
    ],
    ids=["unknown-delivery", "other-namespaces-delivery", "continue-id", "supervisor-env"],
)
def test_a_forged_delivery_by_hand_from_an_ingest_token_resolves_nothing(
    receiver, wake, envelope, field
):
    source = orchestrator("team-a", receiver, STALE)
    task = task_of(source, STALE_TASK)
    elsewhere = task_of(orchestrator("team-b", receiver, STALE), STALE_TASK)
    with clock.virtual_clock(STALE_UNTIL):
        other, _ = do_request_action(elsewhere, "deliver", actor="user:victim", key="k-1")
        assert operator_actions.perform(other.pk) == "succeeded"
    evaluate(source.namespace_id, STALE_UNTIL)
    assert open_kinds(task) >= ANSWERED_BY_A_DELIVERY

    wake = wake.format(unknown=other.pk + 1000, other=other.pk)
    forged = manual_wake("forged-1", wake, PARENT, STALE_TASK, latest_result(task), **envelope)
    result = apply_events(source, [forged])

    [rejected] = result.rejected
    assert rejected["error"].startswith(f"{field}:"), rejected["error"]
    assert "Supervisor" in rejected["error"]
    assert DeadLetter.objects.get(source=source, event_id="forged-1").error == rejected["error"]
    assert not Wake.objects.filter(namespace_id=source.namespace_id, wake_id=wake).exists()
    evaluate(source.namespace_id, STALE_UNTIL + timedelta(minutes=2), tasks=[STALE_TASK])
    assert open_kinds(task) >= ANSWERED_BY_A_DELIVERY


def test_a_sent_deliverys_wake_reported_for_another_task_or_thread_is_refused(receiver):
    source = orchestrator("team-a", receiver, STALE)
    task = task_of(source, STALE_TASK)
    with clock.virtual_clock(STALE_UNTIL):
        action, _ = do_request_action(task, "deliver", actor="user:op")
        assert operator_actions.perform(action.pk) == "succeeded"
    wake = f"supervisor:delivery:{action.pk}"
    elsewhere = manual_wake("moved", wake, "thread:elsewhere", STALE_TASK, action.text)
    other_task = manual_wake("other-task", wake, PARENT, "task:other", action.text)
    result = apply_events(source, [elsewhere, other_task])
    assert [r["id"] for r in result.rejected] == ["moved", "other-task"]
    assert all(r["error"].startswith("data.") for r in result.rejected)
    kept = Wake.objects.get(namespace_id=source.namespace_id, wake_id=wake)
    assert (kept.thread.thread_id, kept.source_task) == (PARENT, STALE_TASK)


def test_a_real_delivery_still_resolves_the_flags_and_its_report_back_is_taken(receiver):
    source = orchestrator("team-a", receiver, STALE)
    task = task_of(source, STALE_TASK)
    evaluate(source.namespace_id, STALE_UNTIL)
    assert open_kinds(task) >= ANSWERED_BY_A_DELIVERY
    with clock.virtual_clock(STALE_UNTIL):
        action, _ = do_request_action(task, "deliver", actor="user:op")
        assert operator_actions.perform(action.pk) == "succeeded"
    back = manual_wake("orch-wake", f"supervisor:delivery:{action.pk}", PARENT, STALE_TASK, "x")
    assert apply_events(source, [back]).rejected == []

    evaluate(source.namespace_id, STALE_UNTIL + timedelta(minutes=2), tasks=[STALE_TASK])
    assert not open_kinds(task) & ANSWERED_BY_A_DELIVERY
