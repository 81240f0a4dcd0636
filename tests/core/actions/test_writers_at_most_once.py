"""A delivery is sent at most once per (task, run), whatever the input and wherever
`perform` fails: every resend carries the same idempotency key (the receiver takes it
once) and no action is attempted more than `max_attempts` times.

Driven as the service drives it: `perform` as a worker runs it, and between attempts
the beat sweep's `requeue_due_actions`, on a virtual clock moved past each lease."""

import contextlib
from datetime import datetime, timedelta
from itertools import count

import pytest
from django.db import DatabaseError
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from supervisor.core import changes, clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.actions import previews
from supervisor.core.actions import writers as actions
from supervisor.core.actions.previews import ActionRefused
from supervisor.core.actions.writers import do_request_action
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, IngestedEvent, Task, Wake
from supervisor.jobs import operator_actions
from tests.support.receiver import Receiver
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db

SECRET = "a-test-secret-of-some-length"
SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))
UNTIL = datetime.fromisoformat(SEED000["until"].replace("Z", "+00:00"))
TASK = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
namespaces = count()


@pytest.fixture
def receiver():
    with Receiver(secret=SECRET) as r:
        yield r


def stale_task(receiver) -> Task:
    """Seed 000's stale task in a namespace of its own, acting through `receiver`."""
    source, _ = do_create_source(f"t3-{next(namespaces)}", scopes="ingest,read,act")
    source.connector = "webhook"
    source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 1}
    source.save()
    apply_events(source, SEED000["events"])
    return Task.objects.select_related("namespace", "parent_thread").get(
        namespace=source.namespace, task_id=TASK
    )


def drive(action: Action, start: datetime) -> str:
    """Work the action as workers and the sweep would until it is finished; a worker
    that raises leaves the row as it is, like a worker that died."""
    cfg = actions.config()
    now = start
    for _ in range(4 * cfg["max_attempts"]):
        state = Action.objects.get(pk=action.pk).state
        if state in (Action.SUCCEEDED, Action.FAILED):
            return state
        with clock.virtual_clock(now):
            actions.requeue_due_actions(now)
            # A worker that raises died there: its row says where it was.
            with contextlib.suppress(Exception, SystemExit):
                operator_actions.perform(action.pk)
        now += timedelta(seconds=cfg["lease"] + cfg["queue_grace"] + 2 ** cfg["max_attempts"])
    return Action.objects.get(pk=action.pk).state


def sent_keys(receiver) -> set[str]:
    return {request.headers["idempotency-key"] for request in receiver.requests}


def deliveries_to(receiver, task: Task) -> int:
    # The receiver takes each key once; what it took for this task is what was sent.
    return sum(1 for d in receiver.deliveries if d["action"]["namespace"] == task.namespace.name)


def printable_ascii(key: str) -> bool:
    """What an HTTP header can carry as it is: no outer spaces (HTTP drops them)."""
    return (
        1 <= len(key) <= 200 and all(" " <= char <= "~" for char in key) and key == key.strip(" ")
    )


# --- any key ---------------------------------------------------------------------------


@pytest.mark.parametrize("length", [1, 100, 190, 191, 192, 196, 199, 200])
def test_a_key_of_any_allowed_length_is_sent_once_and_recorded(receiver, length):
    task = stale_task(receiver)
    key = ("k" * length)[:length]
    with clock.virtual_clock(UNTIL):
        action, created = do_request_action(task, "deliver", actor="user:op", key=key)
    assert created
    assert drive(action, UNTIL) == "succeeded"
    # Sent as its namespace's key: the key asked for behind the namespace's mark, within
    # what a header carries (200 printable characters; hashed past them).
    assert receiver.attempts == 1 and sent_keys(receiver) == {action.sent_key}
    assert printable_ascii(action.sent_key) and action.sent_key.startswith(
        f"ns{task.namespace_id}."
    )
    assert key in action.sent_key or len(key) > 200 - len(f"ns{task.namespace_id}.")
    action.refresh_from_db()
    assert action.last_error is None
    wake = Wake.objects.get(namespace=task.namespace, source_kind="manual")
    event = IngestedEvent.objects.get(source__internal=True, source__namespace=task.namespace)
    assert wake.summary == action.text and len(event.event_id) <= 200


@settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    key=st.one_of(
        st.text(max_size=260),
        st.text(st.characters(codec="ascii"), min_size=185, max_size=210),
        st.text(st.characters(exclude_categories=()), min_size=1, max_size=30),
    )
)
@example(key=" ")  # accepted, then failed at the receiver: HTTP drops outer spaces
@example(key="k ")
def test_any_key_is_either_refused_clearly_or_sent_once(receiver, key):
    task = stale_task(receiver)
    before = receiver.attempts
    with clock.virtual_clock(UNTIL):
        try:
            action, _ = do_request_action(task, "deliver", actor="user:op", key=key)
        except ActionRefused as refused:
            assert not printable_ascii(key)
            assert refused.status == 400 and "Idempotency-Key" in str(refused)
            assert not Action.objects.filter(task=task).exists()
            return
    assert printable_ascii(key)
    assert drive(action, UNTIL) == "succeeded"
    assert receiver.attempts - before == 1 and deliveries_to(receiver, task) == 1
    assert Wake.objects.filter(namespace=task.namespace, source_kind="manual").count() == 1


def test_the_api_refuses_a_key_it_cannot_keep_with_a_400(client, receiver):
    task = stale_task(receiver)
    token = do_create_source("actor", namespace=task.namespace.name, scopes="read,act")[1]
    for key, words in (("k" * 201, "1 to 200"), ("ké", "U+00E9")):
        response = client.post(
            "/api/v1/tasks/" + TASK.replace("%", "%25") + "/actions",
            {"kind": "deliver"},
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}", "Idempotency-Key": key},
        )
        assert response.status_code == 400 and words in response.json()["error"]
    assert not Action.objects.exists()


# --- a failure at each step of perform -------------------------------------------------


def fail_once(
    monkeypatch, name: str, error: Exception, when=lambda *a, **k: True, module=actions
) -> None:
    """`<module>.<name>` raises `error` the first time `when` holds for its arguments."""
    real, failed = getattr(module, name), []

    def failing(*args, **kwargs):
        if not failed and when(*args, **kwargs):
            failed.append(True)
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, failing)


def at_claim(monkeypatch, receiver):
    fail_once(monkeypatch, "do_claim_action", DatabaseError("the database went away"))


def before_the_receiver(monkeypatch, receiver):
    receiver.fail_next(1, status=503)


def after_the_receiver_took_it(monkeypatch, receiver):
    receiver.hold()  # taken, then no answer within the connector's timeout


def recording_the_success(monkeypatch, receiver):
    fail_once(
        monkeypatch,
        "record",
        DatabaseError("the database went away"),
        when=lambda kind, *a, **k: kind == "action.succeeded",
        module=changes,
    )


def a_worker_dying_after_the_send(monkeypatch, receiver):
    fail_once(monkeypatch, "do_record_success", SystemExit(1))


@pytest.mark.parametrize(
    "failure",
    [
        at_claim,
        before_the_receiver,
        after_the_receiver_took_it,
        recording_the_success,
        a_worker_dying_after_the_send,
    ],
    ids=lambda f: f.__name__,
)
def test_a_failure_at_any_step_still_delivers_once(monkeypatch, receiver, failure):
    task = stale_task(receiver)
    with clock.virtual_clock(UNTIL):
        action, _ = do_request_action(task, "deliver", actor="user:op")
    failure(monkeypatch, receiver)
    assert drive(action, UNTIL) == "succeeded"
    receiver.release()
    assert len(receiver.deliveries) == 1 and sent_keys(receiver) == {action.sent_key}
    assert Action.objects.get(pk=action.pk).attempts <= actions.config()["max_attempts"]
    assert Wake.objects.filter(namespace=task.namespace, source_kind="manual").count() == 1


def test_a_failure_to_record_the_manual_wake_never_sends_again(monkeypatch, receiver):
    task = stale_task(receiver)
    with clock.virtual_clock(UNTIL):
        action, _ = do_request_action(task, "deliver", actor="user:op")

    def broken(action, now):
        raise RuntimeError("the wake could not be stored")

    monkeypatch.setattr(actions, "record_delivery", broken)
    assert drive(action, UNTIL) == "succeeded"
    action.refresh_from_db()
    assert receiver.attempts == 1
    assert "sent, but recording it" in action.last_error
    assert "could not be stored" in action.last_error


def test_recording_that_always_fails_after_the_send_stops_at_the_last_attempt(
    monkeypatch, receiver, settings
):
    settings.SUPERVISOR_ACTIONS = {**settings.SUPERVISOR_ACTIONS, "max_attempts": 3}
    task = stale_task(receiver)
    with clock.virtual_clock(UNTIL):
        action, _ = do_request_action(task, "deliver", actor="user:op")

    def dies(*args, **kwargs):
        raise DatabaseError("the database went away")

    monkeypatch.setattr(actions, "do_record_success", dies)
    assert drive(action, UNTIL) == "failed"
    action.refresh_from_db()
    assert receiver.attempts == 3 and sent_keys(receiver) == {action.sent_key}
    assert len(receiver.deliveries) == 1
    assert action.attempts == 3 and "may have been sent" in action.last_error
    # Asking again is allowed (the delivery failed), but the preview says it may be there.
    with clock.virtual_clock(UNTIL):
        preview = previews.preview_action(task, "deliver")
    assert any("may have reached the parent" in line for line in preview.affects)


def test_a_claim_never_takes_an_action_whose_attempts_are_spent(receiver, settings):
    settings.SUPERVISOR_ACTIONS = {**settings.SUPERVISOR_ACTIONS, "max_attempts": 2}
    task = stale_task(receiver)
    with clock.virtual_clock(UNTIL):
        action, _ = do_request_action(task, "deliver", actor="user:op")
    Action.objects.filter(pk=action.pk).update(state=Action.SENDING, attempts=2, due_at=UNTIL)
    assert actions.do_claim_action(action.pk, UNTIL + timedelta(seconds=1)) is None
    action.refresh_from_db()
    assert action.state == "failed" and receiver.attempts == 0
