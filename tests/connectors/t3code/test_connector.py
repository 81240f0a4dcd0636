"""The T3 Code connector against a fake T3 on loopback: the exact command each action
sends, deduplication by command id, how each failure is classified, its settings, the
actions end to end through the worker's code, and the connection test on the source page."""

import socket
from datetime import datetime, timedelta

import pytest
from django.urls import reverse

from supervisor.api.serialize import action_json
from supervisor.connectors.t3code import environment, rpc
from supervisor.connectors.t3code.connector import DISPOSED, T3CodeConnector
from supervisor.connectors.t3code.settings import check_settings
from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.actions.previews import ActionRefused, preview_action
from supervisor.core.actions.writers import do_request_action
from supervisor.core.contract.connectors import (
    ConnectorError,
    Outgoing,
    SettingsError,
    connector_class,
)
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, Task, Wake
from supervisor.jobs import operator_actions
from tests.support.cast import ADMIN, login_as
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario
from tests.support.t3.connector import TOKEN, free_port, t3code
from tests.support.t3.fake_server import DISPATCH, DISPATCH_ERROR, PROJECTION, Call, FakeT3

STALE = next(p for p in CONTRACT_SCENARIOS if p.name == "seed000-stale-finalize.json")
TASK = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
PARENT = "thread:parent-release"
CHILD = "thread:delegated-task:retry-port"


def outgoing(**changes) -> Outgoing:
    fields = {
        "action_id": 7,
        "kind": "deliver",
        "idempotency_key": "sup-7",
        "namespace": "t3",
        "task_id": TASK,
        "task_title": "Fix the retry port",
        "thread_id": PARENT,
        "run_id": "run:thread:child:ordinal:2",
        "text": "Résumé: the port is fixed ✓",
        "actor": "user:op",
        "reason": None,
    }
    return Outgoing(**(fields | changes))


@pytest.fixture
def fake():
    environment.forget()  # a port may come again, and the connector keeps what it read
    with FakeT3(token=TOKEN) as t3:
        yield t3
    environment.forget()


# --- what each action sends ----------------------------------------------------------


def test_deliver_dispatches_the_text_to_the_parent_then_disposes_t3s_own_delivery(fake):
    receipt = t3code(fake.url).perform(outgoing(), timeout=5)

    assert (receipt.status, receipt.detail, receipt.duplicate) == ("ok", '{"sequence": 1}', False)
    assert receipt.extra["dispose"] == DISPOSED
    assert fake.calls[1:] == [
        Call(
            DISPATCH,
            {
                "type": "delegated_task.completion-delivery.dispose",
                "commandId": "supervisor:dispose:sup-7",
                "parentThreadId": PARENT,
                "taskId": TASK,
            },
            "1",
        )
    ]
    assert fake.calls[:1] == [
        Call(
            DISPATCH,
            {
                "type": "message.dispatch",
                "commandId": "supervisor:command:sup-7",
                "threadId": PARENT,
                "messageId": "supervisor:message:sup-7",
                "text": "Résumé: the port is fixed ✓",
                "attachments": [],
                "createdBy": "user",
                "creationSource": "server",
                "deliveryIntent": "auto",
                "dispatchMode": {"type": "start_immediately"},
            },
            "1",
        )
    ]
    # One Request frame per command, Effect's envelope, and no other frame.
    assert fake.frames == [
        {"_tag": "Request", "id": "1", "tag": DISPATCH, "payload": call.payload, "headers": []}
        for call in fake.calls
    ]


def test_a_build_without_completion_records_still_delivers_and_says_so(fake):
    fake.unknown_types = {"delegated_task.completion-delivery.dispose"}

    receipt = t3code(fake.url).perform(outgoing(), timeout=5)

    assert receipt.status == "ok"
    assert receipt.extra["dispose"].startswith("not supported by this T3 build")
    assert list(fake.commands) == ["supervisor:command:sup-7"]


def test_a_dispose_that_fails_does_not_fail_the_sent_delivery(fake):
    fake.unknown_types = set()
    connector = t3code(fake.url)
    connector.dispatch(
        {"type": "message.dispatch", "commandId": "supervisor:command:other", "threadId": PARENT},
        timeout=5,
    )
    fake.refuse("Task is not pending.")  # the message's command id is answered before

    receipt = connector.perform(outgoing(idempotency_key="other"), timeout=5)

    assert receipt.status == "ok"
    assert receipt.extra["dispose"] == "not disposed: T3 refused: Task is not pending."


def test_continue_dispatches_the_message_to_the_child_thread(fake):
    action = outgoing(kind="continue", thread_id="thread:child", run_id=None, text="go on")

    t3code(fake.url).perform(action, timeout=5)

    [call] = fake.calls
    assert call.method == DISPATCH
    command = call.payload
    assert (command["type"], command["threadId"], command["text"]) == (
        "message.dispatch",
        "thread:child",
        "go on",
    )
    assert command["commandId"] == "supervisor:command:sup-7"
    # Its message is the continue's manual wake: the follower knows it again.
    assert command["messageId"] == action.wake == "supervisor:continue:sup-7"


def test_cancel_interrupts_the_childs_run_with_the_reason(fake):
    action = outgoing(
        kind="cancel",
        thread_id="thread:child",
        run_id="run:thread:child:ordinal:2",
        text=None,
        actor="source:t3",
        reason="duplicate",
    )

    receipt = t3code(fake.url).perform(action, timeout=5)

    assert receipt.status == "ok"
    assert [c for c in fake.calls if c.method == DISPATCH] == [
        Call(
            DISPATCH,
            {
                "type": "run.interrupt",
                "commandId": "supervisor:command:sup-7",
                "threadId": "thread:child",
                "runId": "run:thread:child:ordinal:2",
                "reason": "cancelled via Supervisor by source:t3: duplicate",
                "holdQueue": True,
            },
            "1",
        )
    ]


QUEUED = ("run:thread:child:ordinal:3", "run:thread:child:ordinal:4")


def test_cancel_cancels_the_childs_queued_runs_before_interrupting_its_running_one(fake):
    action = outgoing(
        kind="cancel",
        thread_id="thread:child",
        run_id="run:thread:child:ordinal:2",
        text=None,
        queued_runs=QUEUED,
    )

    receipt = t3code(fake.url).perform(action, timeout=5)

    sent = [c.payload for c in fake.calls if c.method == DISPATCH]
    assert [(c["type"], c["runId"]) for c in sent] == [
        ("queued-run.cancel", QUEUED[0]),
        ("queued-run.cancel", QUEUED[1]),
        ("run.interrupt", "run:thread:child:ordinal:2"),
    ]
    assert {c["threadId"] for c in sent} == {"thread:child"}
    assert len({c["commandId"] for c in sent}) == 3  # one command id per run
    assert receipt.as_json()["notes"] == [
        f"queued run {QUEUED[0]}: cancelled",
        f"queued run {QUEUED[1]}: cancelled",
        "no queued run of the child started after the stop",
    ]

    # A worker that died after sending sends it all again: T3 answers from its receipts.
    t3code(fake.url).perform(action, timeout=5)
    assert len(fake.commands) == 3 and sum(fake.repeats.values()) == 3


def test_a_build_without_queued_run_cancel_still_interrupts_and_says_what_stays_queued(fake):
    fake.unknown_types = {"queued-run.cancel"}
    action = outgoing(
        kind="cancel",
        thread_id="thread:child",
        run_id="run:thread:child:ordinal:2",
        text=None,
        queued_runs=QUEUED[:1],
    )

    receipt = t3code(fake.url).perform(action, timeout=5)

    assert [c["type"] for c in fake.commands.values()] == ["run.interrupt"]
    note = receipt.as_json()["notes"][0]
    assert note == (
        f"queued run {QUEUED[0]}: not cancelled, this T3 build has no queued-run.cancel (it "
        "stays queued and may start)"
    )


RUNNING = "run:thread:child:ordinal:2"


def projected_runs(*statuses: tuple[int, str | None, str]) -> list[dict]:
    """The child's runs as T3's thread projection has them: (ordinal, startedAt, status)."""
    return [
        {"id": f"run:thread:child:ordinal:{n}", "ordinal": n, "startedAt": at, "status": st}
        for n, at, st in statuses
    ]


def test_a_cancel_says_which_queued_run_t3_started_once_the_run_stopped(fake):
    # 0.0.33 drops `holdQueue`: a run queued after Supervisor's last read starts at once.
    fake.thread_runs["thread:child"] = projected_runs(
        (2, "2026-08-12T10:00:00.000Z", "interrupted"),
        (3, None, "cancelled"),
        (4, "2026-08-12T10:00:05.000Z", "running"),
        (5, None, "queued"),
    )
    action = outgoing(
        kind="cancel", thread_id="thread:child", run_id=RUNNING, text=None, queued_runs=QUEUED[:1]
    )

    receipt = t3code(fake.url).perform(action, timeout=5)

    assert receipt.as_json()["notes"] == [
        f"queued run {QUEUED[0]}: cancelled",
        "T3 does not hold the child's queue; started after the stop: run "
        "run:thread:child:ordinal:4 (running); still queued, and may start: run "
        "run:thread:child:ordinal:5 (queued)",
    ]
    assert [c.payload for c in fake.calls if c.method == PROJECTION][0] == {
        "threadId": "thread:child"
    }


def test_a_run_that_left_the_queue_but_has_not_started_yet_counts_as_started(fake):
    """Read the moment T3 takes the next run off the queue (`starting`, no `startedAt`
    yet): it did start after the stop. A loaded CI machine caught T3 there, and the
    outcome said no queued run had started."""
    fake.thread_runs["thread:child"] = projected_runs(
        (2, "2026-08-12T10:00:00.000Z", "interrupted"),
        (3, None, "cancelled"),
        (4, None, "starting"),
    )
    action = outgoing(
        kind="cancel", thread_id="thread:child", run_id=RUNNING, text=None, queued_runs=QUEUED[:1]
    )

    receipt = t3code(fake.url).perform(action, timeout=5)

    assert receipt.as_json()["notes"] == [
        f"queued run {QUEUED[0]}: cancelled",
        "T3 does not hold the child's queue; started after the stop: run "
        "run:thread:child:ordinal:4 (starting)",
    ]


def test_a_cancel_whose_thread_t3_shows_without_the_run_says_its_queue_is_not_known(fake):
    fake.thread_runs["thread:child"] = projected_runs((4, "2026-08-12T10:00:05.000Z", "running"))
    action = outgoing(kind="cancel", thread_id="thread:child", run_id=RUNNING, text=None)

    receipt = t3code(fake.url).perform(action, timeout=5)

    assert receipt.status == "ok"  # the stop stands
    assert receipt.as_json()["notes"] == [
        "what the child's queue did after the stop is not known (T3's projection of the "
        f"thread shows no start of run {RUNNING})"
    ]


def test_a_cancel_on_a_t3_that_holds_its_queue_does_not_read_the_thread(fake):
    fake.environment["capabilities"]["runQueueHold"] = True
    action = outgoing(kind="cancel", thread_id="thread:child", run_id=RUNNING, text=None)

    receipt = t3code(fake.url).perform(action, timeout=5)

    assert receipt.as_json().get("notes") is None
    assert [c.method for c in fake.calls] == [DISPATCH]


def test_what_a_stop_does_to_the_queue_is_read_from_the_servers_capabilities(fake):
    connector = t3code(fake.url)
    assert connector.queue_on_stop(timeout=2) == (
        "T3 (server 0.0.33) advertises no held queue: it starts a thread's queued run once "
        "the running one stops"
    )
    # Read once per URL for a while: a change on the server shows after the cache's time.
    fake.environment["capabilities"]["holdQueue"] = True
    assert connector.queue_on_stop(timeout=2).startswith("T3 (server 0.0.33) advertises no")
    environment.forget()
    assert connector.queue_on_stop(timeout=2) is None
    # A capability that is false, or that does not name a queue hold, is no hold.
    fake.environment["capabilities"] = {"holdQueue": False, "threadSnooze": True}
    environment.forget()
    assert connector.queue_on_stop(timeout=2) is not None


def test_a_server_without_the_environment_document_is_assumed_not_to_hold_its_queue(fake):
    fake.environment = None
    why = t3code(fake.url).queue_on_stop(timeout=2)
    assert why.startswith("T3's capabilities could not be read (")
    assert "/.well-known/t3/environment answered 404" in why
    assert why.endswith("so no held queue is assumed")


def test_the_environment_address_sits_beside_the_socket():
    assert environment.environment_url("wss://t3.example/t3/ws?x=1") == (
        "https://t3.example/t3/.well-known/t3/environment"
    )
    assert environment.environment_url("ws://127.0.0.1:3773/ws") == (
        "http://127.0.0.1:3773/.well-known/t3/environment"
    )


def test_a_cancel_that_stops_nothing_fails_saying_why(fake):
    fake.refuse("Queued run is not queued.")
    action = outgoing(
        kind="cancel", thread_id="thread:child", run_id=None, text=None, queued_runs=QUEUED[:1]
    )

    # Nothing under way and the queued run not cancelled: the cancel did nothing.
    with pytest.raises(ConnectorError, match="no run under way, and its queued work") as caught:
        t3code(fake.url).perform(action, timeout=5)
    assert not caught.value.retryable
    assert "Queued run is not queued." in str(caught.value)


def test_cancel_of_a_child_with_only_queued_work_cancels_it(fake):
    action = outgoing(
        kind="cancel",
        thread_id="thread:child",
        run_id=QUEUED[0],  # the run the preview named: queued, so not interrupted
        text=None,
        queued_runs=QUEUED,
    )

    receipt = t3code(fake.url).perform(action, timeout=5)

    assert [c["type"] for c in fake.commands.values()] == ["queued-run.cancel"] * 2
    assert receipt.status == "ok"


def test_cancel_without_a_known_run_is_refused_before_reaching_t3(fake):
    action = outgoing(kind="cancel", thread_id="thread:child", run_id=None, text=None)

    with pytest.raises(ConnectorError) as caught:
        t3code(fake.url).perform(action, timeout=5)

    assert caught.value.retryable is False
    assert "no running run of the child is known to stop" in str(caught.value)
    assert fake.upgrades == []


def test_the_upgrade_carries_the_bearer_token_and_the_protocol(fake):
    t3code(fake.url).perform(outgoing(kind="continue"), timeout=5)

    [upgrade] = fake.upgrades
    assert upgrade.authorization == f"Bearer {TOKEN}"
    assert upgrade.path == "/ws?orchestrationProtocol=2"
    assert upgrade.status == 101


def test_socket_url_sets_the_protocol_and_keeps_other_parameters():
    assert rpc.socket_url("ws://h:3773/ws") == "ws://h:3773/ws?orchestrationProtocol=2"
    assert (
        rpc.socket_url("wss://h/ws?a=1&orchestrationProtocol=1")
        == "wss://h/ws?a=1&orchestrationProtocol=2"
    )


# --- idempotency ---------------------------------------------------------------------


def test_a_resend_of_the_same_action_is_the_same_command_taken_once(fake):
    connector = t3code(fake.url)

    first = connector.perform(outgoing(kind="continue"), timeout=5)
    second = connector.perform(outgoing(kind="continue"), timeout=5)

    assert first.detail == second.detail == '{"sequence": 1}'
    assert [c.payload["commandId"] for c in fake.calls] == ["supervisor:command:sup-7"] * 2
    assert list(fake.commands) == ["supervisor:command:sup-7"]
    assert fake.repeats["supervisor:command:sup-7"] == 1


def test_distinct_actions_are_distinct_commands(fake):
    connector = t3code(fake.url)

    connector.perform(outgoing(idempotency_key="a"), timeout=5)
    connector.perform(outgoing(idempotency_key="b"), timeout=5)

    assert [c for c in fake.commands if ":command:" in c] == [
        "supervisor:command:a",
        "supervisor:command:b",
    ]


def test_a_key_with_any_characters_gives_a_percent_encoded_command_id(fake):
    t3code(fake.url).perform(outgoing(idempotency_key="op:1/ü %"), timeout=5)

    assert fake.calls[0].payload["commandId"] == "supervisor:command:op%3A1%2F%C3%BC%20%25"


# --- refusals and failures -----------------------------------------------------------


def test_a_refusal_is_not_retryable_and_says_what_t3_said(fake):
    fake.refuse("Thread thread:parent-release is archived.")

    with pytest.raises(ConnectorError) as caught:
        t3code(fake.url).perform(outgoing(), timeout=5)

    assert caught.value.retryable is False
    assert str(caught.value) == "T3 refused: Thread thread:parent-release is archived."
    assert DISPATCH_ERROR in caught.value.detail
    assert fake.commands == {}


def test_a_refusal_gives_the_detail_after_the_message(fake):
    fake.refuse("Rejected", detail="Thread has active work.")

    with pytest.raises(ConnectorError, match=r"^T3 refused: Rejected: Thread has active work\.$"):
        t3code(fake.url).perform(outgoing(), timeout=5)


def test_a_command_t3_refused_before_is_said_to_be_an_old_refusal(fake):
    # T3's receipts keep a rejected command id rejected, hiding the first reason.
    fake.refuse(
        "Command supervisor:command:sup-7 was previously rejected: Run is not interruptible."
    )

    with pytest.raises(ConnectorError) as caught:
        t3code(fake.url).perform(outgoing(), timeout=5)

    assert caught.value.retryable is False
    assert str(caught.value).startswith("T3 had already refused this command (same command id)")
    assert "previously rejected" in str(caught.value)


def test_a_refusal_that_t3_calls_transient_is_retryable(fake):
    fake.refuse("The provider is restarting.", retryable=True)

    with pytest.raises(ConnectorError) as caught:
        t3code(fake.url).perform(outgoing(), timeout=5)

    assert caught.value.retryable is True
    assert "The provider is restarting." in str(caught.value)


def test_a_payload_t3_cannot_decode_is_refused_not_retried(fake):
    with pytest.raises(ConnectorError) as caught:
        rpc.call(fake.url, TOKEN, DISPATCH, {"type": "message.dispatch"}, timeout=2)

    assert caught.value.retryable is False
    assert str(caught.value) == "T3 refused: Expected a command with commandId, threadId"


def test_a_method_t3_does_not_have_is_refused_not_retried(fake):
    with pytest.raises(ConnectorError) as caught:
        rpc.call(fake.url, TOKEN, "orchestration.dispatchCommandV9", {}, timeout=2)

    assert caught.value.retryable is False
    assert "Unknown request tag: orchestration.dispatchCommandV9" in str(caught.value)


def test_an_interrupted_call_is_retryable():
    with pytest.raises(ConnectorError) as caught:
        rpc._exit({"_tag": "Failure", "cause": [{"_tag": "Interrupt"}]}, [], "")
    assert caught.value.retryable is True


def test_an_effect_3_cause_tree_is_read_too():
    cause = {
        "_tag": "Sequential",
        "left": {"_tag": "Empty"},
        "right": {"_tag": "Fail", "error": {"_tag": "X", "message": "No such thread."}},
    }
    with pytest.raises(ConnectorError) as caught:
        rpc._exit({"_tag": "Failure", "cause": cause}, [], "")
    assert (str(caught.value), caught.value.retryable) == ("T3 refused: No such thread.", False)


def test_a_wrong_token_is_refused_and_not_retried(fake):
    with pytest.raises(ConnectorError) as caught:
        t3code(fake.url, token="not-the-token").perform(outgoing(), timeout=5)

    assert caught.value.retryable is False
    assert str(caught.value) == (
        "T3 refused the token: 401 Server authentication credential is invalid."
    )
    assert fake.calls == []
    assert "not-the-token" not in str(caught.value) + caught.value.detail


def test_acting_without_a_token_is_refused_before_reaching_t3(fake):
    connector = T3CodeConnector(None, {"url": fake.url})

    with pytest.raises(ConnectorError) as caught:
        connector.perform(outgoing(), timeout=5)

    assert caught.value.retryable is False
    assert "no token" in str(caught.value) and "t3 auth session issue" in str(caught.value)
    assert fake.upgrades == []


def test_a_server_that_is_down_is_retryable():
    url = f"ws://127.0.0.1:{free_port()}/ws"

    with pytest.raises(ConnectorError) as caught:
        t3code(url).perform(outgoing(), timeout=5)

    assert caught.value.retryable is True
    assert str(caught.value).startswith(f"could not connect to T3 at {url}:")


def test_an_answer_that_does_not_come_in_time_is_retryable(fake):
    fake.hold()

    with pytest.raises(ConnectorError) as caught:
        t3code(fake.url, timeout=1).perform(outgoing(), timeout=0.3)

    assert caught.value.retryable is True
    assert str(caught.value) == f"T3 did not answer within 0.3 s ({fake.url})"
    assert fake.held.is_set()


def test_an_upgrade_that_does_not_come_in_time_is_retryable():
    # A socket that listens but never answers: the kernel accepts, nobody upgrades.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"ws://127.0.0.1:{silent.getsockname()[1]}/ws"

        with pytest.raises(ConnectorError) as caught:
            t3code(url).perform(outgoing(), timeout=0.3)

    assert caught.value.retryable is True
    assert "did not complete the WebSocket upgrade within 0.3 s" in str(caught.value)


def test_a_dropped_connection_is_retryable_and_the_retry_lands_once(fake):
    fake.drop_next()
    connector = t3code(fake.url)

    with pytest.raises(ConnectorError) as caught:
        connector.perform(outgoing(kind="continue"), timeout=5)

    assert caught.value.retryable is True
    assert "closed the connection" in str(caught.value)
    assert connector.perform(outgoing(kind="continue"), timeout=5).status == "ok"
    assert len(fake.calls) == 2 and list(fake.commands) == ["supervisor:command:sup-7"]


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_an_upgrade_answered_not_now_is_retryable(fake, status):
    fake.reject_upgrades(status, "busy")

    with pytest.raises(ConnectorError) as caught:
        t3code(fake.url).perform(outgoing(), timeout=5)

    assert caught.value.retryable is True
    assert f"T3 answered {status} to the WebSocket upgrade" in str(caught.value)


def test_a_wrong_path_is_not_retryable(fake):
    with pytest.raises(ConnectorError) as caught:
        t3code(fake.url.replace("/ws", "/socket")).perform(outgoing(), timeout=5)

    assert caught.value.retryable is False
    assert "404" in str(caught.value)


def test_a_ping_from_t3_is_answered_and_the_call_completes(fake):
    fake.ping_first = True

    assert t3code(fake.url).perform(outgoing(kind="continue"), timeout=5).status == "ok"
    # The Pong went out before the answer was read; the server may read it just after.
    fake.wait_for_frames(2)
    assert [f["_tag"] for f in fake.frames] == ["Request", "Pong"]


# --- the connection test -------------------------------------------------------------


def test_the_connection_check_says_what_answered_and_acts_on_nothing(fake):
    answer = t3code(fake.url).check_connection(timeout=5)

    assert answer.startswith(f"T3 answered at {fake.url} (server: fake-t3/1): the token")
    assert fake.frames == [{"_tag": "Ping"}] and fake.calls == []


def test_the_connection_check_says_why_t3_cannot_be_reached(fake):
    with pytest.raises(ConnectorError, match="T3 refused the token: 401"):
        t3code(fake.url, token="wrong-token").check_connection(timeout=5)


# --- settings ------------------------------------------------------------------------


def test_settings_have_defaults_and_the_connector_is_registered():
    assert check_settings({}) == {
        "db_path": None,
        "env": None,
        "url": "ws://127.0.0.1:3773/ws",
        "token": None,
        "timeout": 10,
    }
    assert connector_class("t3code") is T3CodeConnector
    assert T3CodeConnector.label == "T3 Code"


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        ({"url": "http://127.0.0.1:3773/ws"}, "url: must start with ws:// or wss://"),
        ({"url": "ws://:3773/ws"}, "url: names no host"),
        ({"url": "ws://h:99999/ws"}, "url: is not a valid URL"),
        ({"url": "ws://me:pw@h/ws"}, "url: must not carry credentials"),
        ({"token": ""}, "token: must not be empty"),
        ({"token": "abc\nX-Evil: 1"}, "token: must not contain spaces or line breaks"),
        ({"token": 12}, "token: must be a string"),
        ({"timeout": 0}, "timeout: must be between 1 and 60 seconds"),
        ({"timeout": True}, "timeout: must be a number of seconds"),
        ({"db_path": " "}, "db_path: must be the path of T3's state database"),
        (
            {"tokne": "x"},
            "tokne: is not a t3code setting (known: db_path, env, url, token, timeout)",
        ),
        ({"env": "  "}, "env: must be 1 to 200 characters"),
        (["token"], "settings: must be an object"),
    ],
)
def test_settings_errors_name_the_field(settings, error):
    with pytest.raises(SettingsError) as caught:
        check_settings(settings)
    assert str(caught.value).startswith(error)


# --- end to end through the worker's code --------------------------------------------


@pytest.fixture
def stale(db, fake):
    """Seed 000 at its end: a stale result handed on, flagged; the source acts through
    the fake T3."""
    source, _ = do_create_source("t3", scopes="ingest,read,act")
    source.connector = "t3code"
    source.connector_settings = {"url": fake.url, "token": TOKEN, "timeout": 2}
    source.save()
    scenario = load_scenario(STALE)
    apply_events(source, scenario["events"])
    until = datetime.fromisoformat(scenario["until"].replace("Z", "+00:00"))
    evaluate(source.namespace_id, until)
    task = Task.objects.select_related("namespace", "parent_thread").get(task_id=TASK)
    return task, until


def test_deliver_through_the_worker_dispatches_the_delivery_text_to_the_parent(stale, fake):
    task, until = stale
    with clock.virtual_clock(until + timedelta(minutes=1)):
        action, _ = do_request_action(task, "deliver", actor="user:op", reason="seed 000")
        assert operator_actions.perform(action.pk) == "succeeded"

    action.refresh_from_db()
    assert (action.state, action.attempts, action.last_error) == ("succeeded", 1, None)
    assert action.response["detail"] == '{"sequence": 1}'
    assert action.response["notes"] == [f"T3's own pending delivery of the task: {DISPOSED}"]
    call, dispose = fake.calls
    assert dispose.payload["type"] == "delegated_task.completion-delivery.dispose"
    command = call.payload
    assert (call.method, command["type"], command["threadId"]) == (
        DISPATCH,
        "message.dispatch",
        PARENT,
    )
    assert command["text"] == action.text and "delivered by hand via Supervisor" in action.text
    assert command["commandId"] == f"supervisor:command:{action.sent_key}"
    assert Wake.objects.filter(source_kind="manual", source_task=TASK).exists()


def test_a_refusal_through_the_worker_fails_the_action_with_t3s_message(stale, fake):
    task, until = stale
    fake.refuse("Thread thread:parent-release is archived.")
    with clock.virtual_clock(until):
        action, _ = do_request_action(task, "deliver", actor="user:op")
        assert operator_actions.perform(action.pk) == "failed"

    action.refresh_from_db()
    assert action.attempts == 1
    assert action.last_error == "T3 refused: Thread thread:parent-release is archived."
    assert not Wake.objects.filter(source_kind="manual").exists()


def test_continue_through_the_worker_dispatches_the_message_to_the_child(stale, fake):
    task, until = stale
    with clock.virtual_clock(until):
        action, _ = do_request_action(task, "continue", actor="user:op", message="go on")
        assert operator_actions.perform(action.pk) == "succeeded"

    [call] = fake.calls
    assert call.payload["type"] == "message.dispatch"
    assert (call.payload["threadId"], call.payload["text"]) == (CHILD, "go on")


def child_runs(task, *, started=(), queued=()) -> list[str]:
    """Runs of the child started by messages, by ordinal: `started` ones under way,
    `queued` ones requested only; their ids, in that order."""
    events, runs = [], []
    for n in (*started, *queued):
        run = f"{CHILD}:run:{n}"
        runs.append(run)
        data = {"thread": CHILD, "run": run, "ordinal": n, "trigger": {"kind": "message"}}
        at = f"2026-11-05T23:20:{n:02d}.000Z"
        events.append(
            {"id": f"t3c-run{n}-requested", "type": "run.requested", "at": at, "data": data}
        )
        if n in started:
            events.append(
                {"id": f"t3c-run{n}-started", "type": "run.started", "at": at,
                 "data": {"thread": CHILD, "run": run}}
            )  # fmt: skip
    assert not apply_events(task.namespace.sources.get(name="t3"), events).rejected
    return runs


def test_cancel_through_the_worker_interrupts_the_childs_running_run(stale, fake):
    task, until = stale
    [run] = child_runs(task, started=(5,))
    with clock.virtual_clock(until):
        action, _ = do_request_action(task, "cancel", actor="user:op", reason="enough")
        assert operator_actions.perform(action.pk) == "succeeded"

    assert [c for c in fake.calls if c.method == DISPATCH] == [
        Call(
            DISPATCH,
            {
                "type": "run.interrupt",
                "commandId": f"supervisor:command:{action.sent_key}",
                "threadId": CHILD,
                "runId": run,
                "reason": "cancelled via Supervisor by user:op: enough",
                "holdQueue": True,
            },
            "1",
        )
    ]


def test_cancel_through_the_worker_stops_the_run_under_way_and_cancels_the_queued_one(stale, fake):
    task, until = stale
    running, queued = child_runs(task, started=(5,), queued=(6,))
    with clock.virtual_clock(until):
        preview = preview_action(task, "cancel")
        # The run under way is stopped, though a later one is queued behind it.
        assert preview.run == running
        assert preview.affects[1] == (
            "Work queued on the child thread is cancelled where the orchestrator can: run "
            f"{queued}."
        )
        # The fake, as 0.0.33, advertises no held queue: what queued since may start.
        assert preview.affects[-1] == (
            f"Work queued on the child thread may start once run {running} stops: T3 "
            "(server 0.0.33) advertises no held queue: it starts a thread's queued run once "
            "the running one stops. What Supervisor knows to be queued is cancelled first; "
            "what queued since may start (the outcome says what started)."
        )
        action, _ = do_request_action(task, "cancel", actor="user:op", reason="enough")
        assert operator_actions.perform(action.pk) == "succeeded"

    assert [(c["type"], c["runId"]) for c in fake.commands.values()] == [
        ("queued-run.cancel", queued),
        ("run.interrupt", running),
    ]
    action.refresh_from_db()
    assert action.response["notes"] == [
        f"queued run {queued}: cancelled",
        "no queued run of the child started after the stop",
    ]


def test_cancel_with_no_running_run_is_refused_before_anything_is_sent(stale, fake):
    task, until = stale  # every run of the child has finished
    # ... and the task is reported running again, so the cancel is not refused as one of
    # a finished task: T3's own limit is what refuses it.
    again = {
        "id": "t3c-running-again",
        "type": "task.reported",
        "at": "2026-11-05T23:30:00.000Z",
        "data": {"task": task.task_id, "status": "running"},
    }
    assert not apply_events(task.namespace.sources.get(name="t3"), [again]).rejected
    with clock.virtual_clock(until):
        preview = preview_action(task, "cancel")
        assert "nothing to stop" in preview.refusal and "T3 Code stops runs" in preview.refusal
        with pytest.raises(ActionRefused):
            do_request_action(task, "cancel", actor="user:op")
    assert not Action.objects.exists()
    assert fake.upgrades == []


def test_a_passing_failure_through_the_worker_is_retried(stale, fake):
    task, until = stale
    fake.drop_next()
    with clock.virtual_clock(until):
        action, _ = do_request_action(task, "deliver", actor="user:op")
        assert operator_actions.perform(action.pk) == "queued"
        assert operator_actions.perform(action.pk) == "succeeded"
    assert Action.objects.get(pk=action.pk).attempts == 2
    assert [c["type"] for c in fake.commands.values()] == [
        "message.dispatch",
        "delegated_task.completion-delivery.dispose",
    ]


# --- the source page's connection test -----------------------------------------------


def test_the_task_page_shows_what_the_connector_did_beside_a_delivery(client, stale, fake):
    task, until = stale
    with clock.virtual_clock(until + timedelta(minutes=1)):
        action, _ = do_request_action(task, "deliver", actor="user:op")
        assert operator_actions.perform(action.pk) == "succeeded"
    login_as(client, ADMIN)
    html = client.get(reverse("web:task-detail", args=[task.pk])).content.decode()
    assert "T3&#x27;s own pending delivery of the task: disposed, so T3 will not wake" in html
    # The API's action (the task's `actions`, a request's answer) carries them too.
    action.refresh_from_db()
    assert action_json(action)["notes"] == [f"T3's own pending delivery of the task: {DISPOSED}"]


def test_the_source_page_tests_the_connection_and_shows_what_answered(client, stale, fake):
    login_as(client, ADMIN)
    source = stale[0].namespace.sources.get(name="t3")

    page = client.get(f"/admin/sources/{source.pk}/").content.decode()
    assert f'action="/admin/sources/{source.pk}/test/"' in page

    response = client.post(f"/admin/sources/{source.pk}/test/", follow=True)
    html = response.content.decode()
    assert "Connection test of t3: T3 answered at " in html
    assert fake.calls == [] and fake.frames == [{"_tag": "Ping"}]


def test_the_source_page_shows_why_the_connection_test_failed(client, stale, fake):
    login_as(client, ADMIN)
    source = stale[0].namespace.sources.get(name="t3")
    source.connector_settings = {"url": fake.url, "token": "wrong-token"}
    source.save()

    html = client.post(f"/admin/sources/{source.pk}/test/", follow=True).content.decode()

    assert "Connection test of t3 failed: T3 refused the token: 401" in html
