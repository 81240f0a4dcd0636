"""A real webhook receiver on loopback, for tests: it checks signatures, takes each
idempotency key once, and can be told to fail, refuse, or hold a request.

    with Receiver(secret="0123456789abcdef") as r:
        ... post to r.url ...
        assert len(r.deliveries) == 1

Each request, in order: counted in `attempts` and kept in `requests`; answered with the
status of `fail_next` while any remain, or of `refuse`; 401 on a bad signature; 400 on
a missing key or a body that is not JSON; 200 `probe: true` for a connection test's
probe (no delivery); 200 `duplicate: true` for a key seen before;
otherwise recorded as a delivery, held if `hold()` was called, and answered 200.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from dataclasses import dataclass
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from supervisor.connectors.webhook import signing


@dataclass(frozen=True)
class Request:
    """One request as it arrived, whatever was answered."""

    path: str
    headers: Message  # case-insensitive: request.headers["idempotency-key"]
    body: bytes
    status: int  # what the receiver answered


class Receiver:
    def __init__(self, secret: str, *, path: str = "/hook", port: int = 0):
        self.secret = secret
        self.deliveries: list[Any] = []  # accepted bodies, parsed, one per distinct key
        self.by_key: dict[str, Any] = {}  # idempotency key -> accepted body
        self.requests: list[Request] = []  # every request, duplicates and failures too
        self.accepted = threading.Event()  # a held request was accepted
        self._path = path
        self._changed = threading.Condition()
        self._failing: tuple[int, int] = (0, 503)  # (how many more, status)
        self._refusal: tuple[int, Any, dict[str, str]] | None = None
        self._hold = False
        self._released = threading.Event()
        self._stopping = threading.Event()
        # A given port: a test can point a connector at it before the receiver is up.
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval, on every test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{self._path}"

    @property
    def attempts(self) -> int:
        return len(self.requests)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stopping.set()  # lets a held request go
        if self._thread.is_alive():  # shutdown() waits forever on a server never started
            self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # --- behaviour -------------------------------------------------------------------

    def fail_next(self, n: int, status: int = 503) -> None:
        """Answer the next `n` requests with `status`, recording no delivery."""
        with self._changed:
            self._failing = (n, status)

    def refuse(self, status: int = 422, body: Any = None, headers: dict | None = None) -> None:
        """Answer every request from now on with `status` and `body` (a str is sent as
        text, anything else as JSON), plus `headers` (e.g. a redirect's Location)."""
        if body is None:
            body = {"ok": False, "error": "refused on purpose"}
        with self._changed:
            self._refusal = (status, body, headers or {})

    def hold(self) -> None:
        """Hold the next delivery: record it, set `accepted`, and answer only after
        `release()`, the client's disconnection, or the receiver's stop."""
        with self._changed:
            self._hold = True
            self.accepted.clear()
            self._released.clear()

    def release(self) -> None:
        self._released.set()

    def wait_for_attempts(self, n: int, timeout: float = 5) -> bool:
        """Whether `attempts` reached `n` within `timeout` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self.attempts >= n, timeout=timeout)

    # --- what the handler calls ------------------------------------------------------

    def _answer(self, path: str, headers: Message, body: bytes) -> tuple[int, Any, dict, bool]:
        """(status, answer, extra headers, whether to hold) for one request."""
        with self._changed:
            status, answer, extra, held = self._decide(headers, body)
            self.requests.append(Request(path, headers, body, status))
            self._changed.notify_all()
        return status, answer, extra, held

    def _decide(self, headers: Message, body: bytes) -> tuple[int, Any, dict, bool]:
        failing, status = self._failing
        if failing:
            self._failing = (failing - 1, status)
            return status, {"ok": False, "error": "failing on purpose"}, {}, False
        if self._refusal:
            return *self._refusal, False
        try:
            signing.verify(self.secret, body, headers.get(signing.HEADER))
        except signing.BadSignature as exc:
            return 401, {"ok": False, "error": str(exc)}, {}, False
        key = headers.get(signing.IDEMPOTENCY_HEADER)
        if not key:
            return 400, {"ok": False, "error": f"missing {signing.IDEMPOTENCY_HEADER}"}, {}, False
        try:
            document = json.loads(body)
        except ValueError:
            return 400, {"ok": False, "error": "body is not JSON"}, {}, False
        if isinstance(document, dict) and document.get("type") == "supervisor.probe":
            return 200, {"ok": True, "probe": True}, {}, False  # a connection test: no delivery
        if key in self.by_key:
            return 200, {"ok": True, "duplicate": True}, {}, False
        self.by_key[key] = document
        self.deliveries.append(document)
        held, self._hold = self._hold, False
        return 200, {"ok": True, "duplicate": False}, {}, held

    def _wait_for_release(self, connection: socket.socket) -> None:
        self.accepted.set()
        while not (self._released.is_set() or self._stopping.is_set()):
            if _disconnected(connection):
                return
            time.sleep(0.02)


def _disconnected(connection: socket.socket) -> bool:
    # The client sent its whole request, so readable now means it closed (or reset).
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _handler_for(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, answer, extra, held = receiver._answer(self.path, self.headers, body)
            if held:
                receiver._wait_for_release(self.connection)
            text = answer if isinstance(answer, str) else json.dumps(answer)
            kind = "text/plain" if isinstance(answer, str) else "application/json"
            try:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(text.encode())))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(text.encode())
            except OSError:
                pass  # the client is gone: what it would have read no longer matters

        def log_message(self, format, *args):
            pass  # tests read `requests`, not stderr

    return Handler
