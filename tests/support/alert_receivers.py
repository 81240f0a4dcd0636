"""Real receivers on loopback for notification tests: an HTTP server that takes what
Apprise posts (json://, ntfy://) and an SMTP server (aiosmtpd). Each keeps every
message as it arrived and, like a careful receiver, the distinct ones by their key
(the `ref: KEY` line Supervisor puts in every message)."""

from __future__ import annotations

import re
import socket
import threading
from dataclasses import dataclass, field
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller

KEY = re.compile(r"ref: ([A-Za-z0-9:_-]+)")


@dataclass
class Captured:
    """Everything that arrived, and the distinct messages by key."""

    raw: list[str] = field(default_factory=list)
    by_key: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, text: str) -> None:
        with self.lock:
            self.raw.append(text)
            match = KEY.search(text)
            if match and match.group(1) not in self.by_key:
                self.by_key[match.group(1)] = text

    @property
    def keys(self) -> list[str]:
        return [m.group(1) for m in map(KEY.search, self.raw) if m]


class HttpReceiver(Captured):
    """Answers 200 to every POST (or `status`), after `hold()` keeps the next request
    open until `release()`; a path in `redirects` is answered with its (status,
    Location) instead. `headers` keeps each request's headers."""

    def __init__(self):
        super().__init__()
        self.paths: list[str] = []
        self.headers: list[dict] = []
        self.redirects: dict[str, tuple[int, str]] = {}
        self.status = 200
        self.accepted = threading.Event()
        self._hold = False
        self._released = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def hold(self) -> None:
        self._hold, self._released = True, threading.Event()
        self.accepted.clear()

    def release(self) -> None:
        self._released.set()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._released.set()
        self._server.shutdown()
        self._server.server_close()


def _handler(receiver: HttpReceiver):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            receiver.paths.append(self.path)
            receiver.headers.append(dict(self.headers.items()))
            if self.path in receiver.redirects:
                status, location = receiver.redirects[self.path]
                self.send_response(status)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = receiver.status
            if status == 200:
                receiver.take(body.decode("utf-8", "replace"))
            if receiver._hold:
                receiver._hold = False
                receiver.accepted.set()
                receiver._released.wait(30)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")
            except OSError:
                pass

        def log_message(self, *args):
            pass

    return Handler


class SmtpReceiver(Captured):
    """aiosmtpd on a free loopback port; `headers` keeps each message's key header."""

    def __init__(self):
        super().__init__()
        self.headers: list[dict] = []
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)

    async def handle_DATA(self, server, session, envelope):
        message = message_from_bytes(envelope.content)
        self.headers.append(dict(message.items()))
        self.take(message.get_payload(decode=True).decode("utf-8", "replace"))
        return "250 OK"

    def __enter__(self):
        self._controller.start()
        return self

    def __exit__(self, *exc):
        self._controller.stop()
