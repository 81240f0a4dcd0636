"""The orchestrator's API away while actions are sent through the webhook connector:
refusing connections, or taking them and never answering. Actions retry with backoff
and end `failed` with a reason naming what failed; a receiver that comes back during
the retries gets the action once."""

from __future__ import annotations

import socket
import threading
import time

from tests.support.faults.actions import SECRET, SEED000, action_row, post_events, request_delivery
from tests.support.faults.services import free_port, wait_for
from tests.support.receiver import Receiver

RETRIES = {"SUPERVISOR_ACTION_BACKOFF": "1", "SUPERVISOR_ACTION_ATTEMPTS": "3"}


class Silent:
    """Accepts connections, reads what comes, never answers: a hung API."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections.append(conn)

    def __enter__(self) -> Silent:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()
        for conn in self.connections:
            conn.close()


def retries_recorded(stack, action_id: int) -> int:
    return stack.sql(
        "SELECT count(*) FROM core_change WHERE kind = 'action.retrying' "
        "AND (payload->>'action')::int = %s",
        action_id,
    )[0][0]


def deliver_to(stack, url: str, timeout: float = 20, **settings: str) -> tuple[int, float]:
    """A source bound to a webhook at `url`, seed 000 ingested, a delivery asked for:
    (action id, when it was asked)."""
    stack.env.update(settings)
    token = stack.create_source(
        "orchestrator",
        connector="webhook",
        settings={"url": url, "secret": SECRET, "timeout": timeout},
    )
    stack.start_web()
    stack.start_worker()
    stack.start_beat()
    post_events(stack, token, SEED000["events"])
    return request_delivery(stack, token), time.monotonic()


def finished(stack, action_id: int) -> dict:
    row = wait_for(
        lambda: (r := action_row(stack, action_id))["state"] in ("succeeded", "failed") and r,
        timeout=60,
        what="the action to finish",
    )
    return row


def test_orchestrator_refusing_connections(stack, figures):
    port = free_port()  # nothing listens there
    url = f"http://127.0.0.1:{port}/hook"
    action_id, asked = deliver_to(stack, url, **RETRIES)
    row = finished(stack, action_id)
    figures.update(
        actions_requested=1,
        state=row["state"],
        attempts=row["attempts"],
        retries=retries_recorded(stack, action_id),
        reason=row["last_error"],
        seconds_to_failed=round(time.monotonic() - asked, 1),
    )
    assert row["state"] == "failed" and row["attempts"] == 3
    assert retries_recorded(stack, action_id) == 2
    assert row["last_error"] == f"could not connect to {url}: Connection refused"


def test_orchestrator_hanging(stack, figures):
    with Silent() as silent:
        action_id, asked = deliver_to(
            stack, f"http://127.0.0.1:{silent.port}/hook", timeout=1, **RETRIES
        )
        row = finished(stack, action_id)
        figures.update(
            actions_requested=1,
            state=row["state"],
            attempts=row["attempts"],
            retries=retries_recorded(stack, action_id),
            connections_taken=len(silent.connections),
            reason=row["last_error"],
            seconds_to_failed=round(time.monotonic() - asked, 1),
        )
        assert row["state"] == "failed" and row["attempts"] == 3
        assert retries_recorded(stack, action_id) == 2
        assert len(silent.connections) == 3
        assert row["last_error"] == (
            f"webhook http://127.0.0.1:{silent.port}/hook timed out after 1 s"
        )


def test_orchestrator_back_during_the_retries(stack, figures):
    port = free_port()
    settings = {"SUPERVISOR_ACTION_BACKOFF": "1", "SUPERVISOR_ACTION_ATTEMPTS": "5"}
    action_id, asked = deliver_to(stack, f"http://127.0.0.1:{port}/hook", **settings)
    wait_for(
        lambda: action_row(stack, action_id)["last_error"],
        what="a first attempt to fail",
    )
    failed_first = action_row(stack, action_id)
    with Receiver(secret=SECRET, port=port) as receiver:
        row = finished(stack, action_id)
        time.sleep(1.5)  # a copy sent late would arrive by now
        figures.update(
            actions_requested=1,
            state=row["state"],
            attempts=row["attempts"],
            retries=retries_recorded(stack, action_id),
            receiver_attempts=receiver.attempts,
            deliveries=len(receiver.deliveries),
            doubled=len(receiver.deliveries) - 1,
            seconds_to_succeeded=round(time.monotonic() - asked, 1),
        )
        assert failed_first["state"] == "queued"
        assert "Connection refused" in failed_first["last_error"]
        assert row["state"] == "succeeded" and row["attempts"] >= 2
        assert len(receiver.deliveries) == 1 and receiver.attempts == 1
