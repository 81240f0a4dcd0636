"""Acting on a real T3 Code server: following its database and judging, reading its rows,
waiting for what it writes, and a delivery across a worker's crash."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from supervisor.connectors.t3code import rpc
from supervisor.connectors.t3code.connector import command_id, derived_id
from supervisor.connectors.t3code.follower import Follower
from supervisor.core import clock
from supervisor.core.actions import writers as actions
from supervisor.core.actions.sending import outgoing_for
from supervisor.core.contract.connectors import ConnectorError
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.models import Action, Flag, Wake
from supervisor.jobs import operator_actions


def follow_and_judge(source, base: Path, at) -> None:
    follower = Follower(source, str(base / "userdata" / "state.sqlite"), evaluate=False)
    try:
        follower.follow()
    finally:
        follower.close()
    with clock.virtual_clock(at):
        evaluate(source.namespace_id, at)


def open_kinds(task_id: str) -> set[str]:
    return set(
        Flag.objects.filter(task__task_id=task_id, state="open").values_list("kind", flat=True)
    )


def rows(base: Path, query: str, *args) -> list[tuple]:
    with sqlite3.connect(f"file:{base / 'userdata' / 'state.sqlite'}?mode=ro", uri=True) as db:
        return db.execute(query, args).fetchall()


def eventually(read, until, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if until(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def user_messages(base: Path, thread: str) -> list[str]:
    """The texts of the thread's user messages (deliveries and wakes are user messages)."""
    found = rows(
        base,
        "SELECT payload_json FROM orchestration_v2_projection_messages WHERE thread_id = ?",
        thread,
    )
    texts = [json.loads(payload) for (payload,) in found]
    return [m.get("text") or "" for m in texts if m.get("role") == "user"]


def deliver_across_a_crash(action: Action, at, monkeypatch) -> tuple[dict, datetime]:
    """Perform `action` as a worker killed after T3 took its commands and before it
    recorded them would, then as the worker that takes it back once its lease ran out
    (the beat sweep, a claim, the same connector): {command type: [(command, T3's answer
    or the error), one per send]}, and when the action was finished."""
    sent: dict[str, list[tuple[dict, object]]] = {}
    real_call, real_success = rpc.call, actions.do_record_success

    def recording(url, token, method, payload, *, timeout):
        def note(answer):
            if method == "orchestration.dispatchCommand":
                sent.setdefault(payload["type"], []).append((payload, answer))

        try:
            reply = real_call(url, token, method, payload, timeout=timeout)
        except ConnectorError as exc:
            note(exc)
            raise
        note(reply.value)
        return reply

    def killed(*args, **kwargs):
        raise SystemExit(1)  # no `except Exception` stops it: nothing of the worker runs on

    monkeypatch.setattr(rpc, "call", recording)
    monkeypatch.setattr(actions, "do_record_success", killed)
    with clock.virtual_clock(at), pytest.raises(SystemExit):
        operator_actions.perform(action.pk)
    action.refresh_from_db()
    assert (action.state, action.attempts) == ("sending", 1)

    monkeypatch.setattr(actions, "do_record_success", real_success)
    later = at + timedelta(seconds=actions.config()["lease"] + 1)
    with clock.virtual_clock(later):
        assert actions.requeue_due_actions(later) == 1
        assert operator_actions.perform(action.pk) == "succeeded"
    action.refresh_from_db()
    assert (action.state, action.attempts) == ("succeeded", 2)
    # Supervisor records one delivery: the parent's one manual wake.
    assert Wake.objects.filter(namespace=action.task.namespace, source_kind="manual").count() == 1
    # The resend is the same command: the same command and message ids as the first.
    outgoing = outgoing_for(action)
    (first, _), (second, _) = sent["message.dispatch"]
    assert first == second
    assert first["commandId"] == command_id(outgoing) and first["messageId"] == derived_id(
        "message", outgoing
    )
    return sent, later
