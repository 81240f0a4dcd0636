"""A fake T3 Code server on loopback, for tests: its `/ws` speaks the Effect RPC frames of
t3code-facts.md (and `supervisor.connectors.t3code.rpc`), checks the bearer token and
the protocol, and records what it was asked.

    with FakeT3(token="t3-token") as t3:
        ... connect to t3.url ...
        assert [c.payload["type"] for c in t3.calls] == ["message.dispatch"]

The upgrade: 426 without `orchestrationProtocol=2`, 401 without `Authorization: Bearer
<token>`, or the status of `reject_upgrades()`. Then each frame, in order, is kept in
`frames`; a `Ping` is answered `Pong`; each `Request` is kept in `calls` (method and
payload) and answered:

- `orchestration.dispatchCommand`: a payload without `type`, `commandId` or `threadId`
  fails with a `Die` (as Effect answers a payload its schema does not decode); a command
  id seen before gets the first answer again (counted in `repeats`); while `refuse()` is
  in force, a `Fail` with T3's `OrchestrationV2DispatchCommandError`; otherwise the
  command is taken (`commands`) and answered `{"sequence": n}`.
- any other method: a `Defect` frame, as Effect sends for a tag it cannot route.

`GET /api/auth/session` answers what the bearer token may do (`session_scopes`,
`session_expires`), as T3's session endpoint does.

Before answering, the fake can be told to hold (until `release()`, or its stop), to drop
the connection instead (`drop_next()`), or to send a `Ping` first (`ping_first`).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve

DISPATCH = "orchestration.dispatchCommand"
PROJECTION = "orchestration.getThreadProjection"
DISPATCH_ERROR = "OrchestrationV2DispatchCommandError"
SERVER = "fake-t3/1"


@dataclass(frozen=True)
class Call:
    """One Request frame as it arrived, whatever was answered."""

    method: str
    payload: Any
    id: Any


@dataclass(frozen=True)
class Upgrade:
    """One upgrade attempt: its path and query, headers, and the status answered."""

    path: str
    authorization: str | None
    status: int


class FakeT3:
    def __init__(self, token: str = "t3-test-token"):
        self.token = token
        self.calls: list[Call] = []  # every Request, repeats and refusals too
        self.frames: list[dict] = []  # every frame the client sent, parsed
        self.upgrades: list[Upgrade] = []
        self.commands: dict[str, dict] = {}  # command id -> command, for each one taken
        self.repeats: Counter[str] = Counter()  # command id -> resends answered from memory
        self.answers: dict[str, dict] = {}  # command id -> the Success value it got
        self.ping_first = False  # send a Ping before each answer, and expect a Pong
        self.held = threading.Event()  # a held request arrived
        self._changed = threading.Condition()
        self._sequence = 0
        self._refusal: dict | None = None
        self.unknown_types: set[str] = set()  # command types this "build" does not have
        # What `GET /api/auth/session` says the token may do; None: no such endpoint.
        self.session_scopes: list[str] | None = ["orchestration:read", "orchestration:operate"]
        self.session_expires: str | None = "2027-01-01T00:00:00.000Z"
        self.session_accepts = True  # False: the endpoint calls every token unauthenticated
        # What `GET /.well-known/t3/environment` answers; None: no such document (404).
        self.environment: dict | None = {
            "serverVersion": "0.0.33",
            "capabilities": {"repositoryIdentity": True, "threadSettlement": True},
        }
        # Each thread's runs, as `orchestration.getThreadProjection` answers them.
        self.thread_runs: dict[str, list[dict]] = {}
        self._upgrade_status: int | None = None
        self._upgrade_body = ""
        self._hold = False
        self._drop = False
        self._released = threading.Event()
        self._stopping = threading.Event()
        self._server = serve(
            self._serve,
            "127.0.0.1",
            0,
            process_request=self._check_upgrade,
            server_header=SERVER,
            compression=None,
        )
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._server.socket.getsockname()[1]

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def __enter__(self) -> FakeT3:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stopping.set()  # lets a held request go
        self._server.shutdown()
        self._thread.join(timeout=5)

    # --- behaviour -------------------------------------------------------------------

    def refuse(self, message: str, *, detail: str | None = None, **fields: Any) -> None:
        """Fail every dispatch from now on with T3's typed error saying `message`; `fields`
        are added to the error (e.g. `retryable=True`)."""
        with self._changed:
            self._refusal = {"message": message, **({"detail": detail} if detail else {}), **fields}

    def accept(self) -> None:
        """Take commands again after `refuse()`."""
        with self._changed:
            self._refusal = None

    def reject_upgrades(self, status: int | None, body: str = "") -> None:
        """Answer every upgrade with `status` (None: upgrade normally again)."""
        with self._changed:
            self._upgrade_status = status
            self._upgrade_body = body

    def hold(self) -> None:
        """Hold the next request: record it, set `held`, and answer only after `release()`
        or the fake's stop."""
        with self._changed:
            self._hold = True
            self.held.clear()
            self._released.clear()

    def release(self) -> None:
        self._released.set()

    def drop_next(self) -> None:
        """Record the next request, then close the TCP connection without answering."""
        with self._changed:
            self._drop = True

    def wait_for_calls(self, n: int, timeout: float = 5) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: len(self.calls) >= n, timeout=timeout)

    def wait_for_frames(self, n: int, timeout: float = 5) -> bool:
        """The client's last frame may still be in flight when its call returns."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self.frames) >= n, timeout=timeout)

    # --- the upgrade -----------------------------------------------------------------

    def _check_upgrade(self, connection: ServerConnection, request):
        parts = urlsplit(request.path)
        authorization = request.headers.get("Authorization")
        status, answer = 101, None
        with self._changed:
            forced, body = self._upgrade_status, self._upgrade_body
        if parts.path == "/api/auth/session":
            return self._session(connection, authorization)
        if parts.path == "/.well-known/t3/environment":
            if self.environment is None:
                return connection.respond(404, "Not Found")
            response = connection.respond(200, json.dumps(self.environment))
            response.headers["Content-Type"] = "application/json"
            return response
        if parts.path != "/ws":
            status, answer = 404, {"error": "not_found", "message": f"No route {parts.path}."}
        elif parse_qs(parts.query).get("orchestrationProtocol") != ["2"]:
            status, answer = (
                426,
                {
                    "code": "orchestration_protocol_incompatible",
                    "message": "Update this client to one that supports orchestration protocol 2.",
                    "orchestrationProtocolVersion": 2,
                },
            )
        elif authorization != f"Bearer {self.token}":
            status, answer = (
                401,
                {
                    "error": "invalid_credential",
                    "message": "Server authentication credential is invalid.",
                },
            )
        elif forced is not None:
            status, answer = forced, body
        with self._changed:
            self.upgrades.append(Upgrade(request.path, authorization, status))
        if answer is None:
            return None
        text = answer if isinstance(answer, str) else json.dumps(answer)
        response = connection.respond(status, text)
        if not isinstance(answer, str):
            response.headers["Content-Type"] = "application/json"
        return response

    def _session(self, connection: ServerConnection, authorization: str | None):
        """T3's `GET /api/auth/session`: what the bearer token may do (404 when the fake
        plays a build without the endpoint: `session_scopes = None`)."""
        if self.session_scopes is None:
            return connection.respond(404, "Not Found")
        accepted = self.session_accepts and authorization == f"Bearer {self.token}"
        answer: dict[str, Any] = {"authenticated": accepted}
        if answer["authenticated"]:
            answer |= {"scopes": self.session_scopes, "sessionMethod": "bearer-access-token"}
            if self.session_expires:
                answer["expiresAt"] = self.session_expires
        response = connection.respond(200, json.dumps(answer))
        response.headers["Content-Type"] = "application/json"
        return response

    # --- the frames ------------------------------------------------------------------

    def _serve(self, connection: ServerConnection) -> None:
        try:
            for data in connection:
                frame = json.loads(data)
                with self._changed:
                    self.frames.append(frame)
                    self._changed.notify_all()
                if frame.get("_tag") == "Ping":
                    connection.send(json.dumps({"_tag": "Pong"}))
                elif frame.get("_tag") == "Request":
                    self._request(connection, frame)
        except ConnectionClosed:
            pass  # the client is gone: what it would have read no longer matters

    def _request(self, connection: ServerConnection, frame: dict) -> None:
        call = Call(frame.get("tag"), frame.get("payload"), frame.get("id"))
        with self._changed:
            self.calls.append(call)
            self._changed.notify_all()
            drop, self._drop = self._drop, False
            held, self._hold = self._hold, False
        if drop:
            connection.close_socket()
            return
        if held:
            self.held.set()
            while not (self._released.wait(0.02) or self._stopping.is_set()):
                pass
        if self.ping_first:
            connection.send(json.dumps({"_tag": "Ping"}))
        connection.send(json.dumps(self._answer(call, str(frame.get("id")))))

    def _runs_from_commands(self, thread: str) -> list[dict]:
        """A thread's runs as the commands taken left them (unless `thread_runs` says):
        each interrupted run started and stopped, each cancelled one never started."""
        return [
            _stopped_run(command)
            for command in self.commands.values()
            if command.get("threadId") == thread
            and command.get("type") in ("run.interrupt", "queued-run.cancel")
        ]

    def _answer(self, call: Call, request_id: str) -> dict:
        if call.method == PROJECTION:
            thread = (call.payload or {}).get("threadId")
            with self._changed:
                runs = self.thread_runs.get(thread) or self._runs_from_commands(thread)
            return _success(request_id, {"threadId": thread, "runs": runs})
        if call.method != DISPATCH:
            return {"_tag": "Defect", "defect": f"Unknown request tag: {call.method}"}
        command = call.payload if isinstance(call.payload, dict) else {}
        if command.get("type") in self.unknown_types:
            # What a build without the command answers: its schema does not decode it.
            issue = f'Expected "message.dispatch" | "run.interrupt" | …, got "{command["type"]}"'
            return _exit(request_id, {"_tag": "Failure", "cause": [_die(issue)]})
        needed = (
            ("parentThreadId", "taskId")
            if str(command.get("type", "")).startswith("delegated_task.")
            else ("threadId",)
        )
        missing = [key for key in ("type", "commandId", *needed) if not command.get(key)]
        if missing:
            issue = f"Expected a command with {', '.join(missing)}"
            return _exit(request_id, {"_tag": "Failure", "cause": [_die(issue)]})
        command_id = command["commandId"]
        with self._changed:
            if command_id in self.answers:
                self.repeats[command_id] += 1
                return _success(request_id, self.answers[command_id])
            if self._refusal is not None:
                error = {
                    "_tag": DISPATCH_ERROR,
                    "commandId": command_id,
                    "commandType": command["type"],
                    **self._refusal,
                }
                return _exit(
                    request_id, {"_tag": "Failure", "cause": [{"_tag": "Fail", "error": error}]}
                )
            self._sequence += 1
            self.commands[command_id] = command
            self.answers[command_id] = {"sequence": self._sequence}
            return _success(request_id, self.answers[command_id])


def _stopped_run(command: dict) -> dict:
    if command["type"] == "run.interrupt":
        return {
            "id": command["runId"],
            "startedAt": "2026-01-01T00:00:00.000Z",
            "status": "interrupted",
        }
    return {"id": command["runId"], "startedAt": None, "status": "cancelled"}


def _success(request_id: str, value: Any) -> dict:
    return _exit(request_id, {"_tag": "Success", "value": value})


def _exit(request_id: str, exit: dict) -> dict:
    return {"_tag": "Exit", "requestId": request_id, "exit": exit, "headers": []}


def _die(defect: str) -> dict:
    return {"_tag": "Die", "defect": defect}
