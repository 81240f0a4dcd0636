"""The demo fleet's webhook receiver: it answers Supervisor's actions the way an
orchestrator would (`answers.py`), posting the answer back as events through the
fleet's sink. It checks the signature and takes each idempotency key once."""

from __future__ import annotations

import json
import threading
from dataclasses import fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.db import connections

from supervisor.connectors.webhook import signing
from supervisor.core.contract.connectors import Outgoing
from supervisor.demo.answers import answer_events, view_from_fleet
from supervisor.demo.fleet import Fleet
from supervisor.demo.sending import FatalSend, Pacer

MAX_BODY = 1024 * 1024  # an action body larger than this is not Supervisor's


class Receiver(ThreadingHTTPServer):
    """The webhook receiver: checks the signature, takes each idempotency key once, and
    answers the action with the simulated orchestrator's events."""

    daemon_threads = True

    def __init__(self, address, secret: str, fleet: Fleet, sink, pacer: Pacer, log):
        super().__init__(address, ReceiverHandler)
        self.secret = secret
        self.fleet = fleet
        self.sink = sink
        self.pacer = pacer
        self.log = log
        self.answered: dict[str, list[dict]] = {}
        self.lock = threading.Lock()

    def answer(self, key: str, action: dict) -> tuple[int, dict]:
        known = {f.name for f in fields(Outgoing)}
        try:
            outgoing = Outgoing(**{k: v for k, v in action.items() if k in known})
        except TypeError as exc:
            return 400, {"error": f"the action lacks fields: {exc}"}
        with self.lock:
            events = self.answered.get(key)
            duplicate = events is not None
            if events is None:
                view = view_from_fleet(self.fleet, outgoing.thread_id)
                if view is None:
                    return 409, {
                        "error": f"this simulator (seed {self.fleet.seed}) does not know "
                        f"thread {outgoing.thread_id!r}"
                    }
                at = self.fleet.at(self.pacer.virtual_now(), view.env)
                try:
                    events = answer_events(outgoing, view, at)
                except ValueError as exc:
                    return 400, {"error": str(exc)}
                self.answered[key] = events
                self.fleet.observe(events)
        # Posted again on a repeat too: the first post may have failed, and ingest takes
        # each event id once, so a repeat that got through changes nothing.
        self.sink.send(events)
        if not duplicate:
            self.log(f"answered {outgoing.kind} on {outgoing.task_id} ({len(events)} events)")
        return 200, {"ok": True, "duplicate": duplicate, "events": len(events)}


class ReceiverHandler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self):
        try:
            status, answer = self._handle()
        except FatalSend as exc:
            status, answer = 502, {"error": f"could not post the answer: {exc}"}
        finally:
            connections.close_all()  # this thread's, if an in-process answer opened one
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> tuple[int, dict]:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return 400, {"error": "bad Content-Length"}
        if length > MAX_BODY:
            return 413, {"error": "body too large"}
        body = self.rfile.read(length)
        try:
            signing.verify(self.server.secret, body, self.headers.get(signing.HEADER))
        except signing.BadSignature as exc:
            return 401, {"error": str(exc)}
        key = self.headers.get(signing.IDEMPOTENCY_HEADER)
        if not key:
            return 400, {"error": f"missing {signing.IDEMPOTENCY_HEADER} header"}
        try:
            document = json.loads(body)
        except ValueError as exc:
            return 400, {"error": f"the body is not JSON: {exc}"}
        if isinstance(document, dict) and document.get("type") == "supervisor.probe":
            return 200, {"ok": True, "probe": True}  # the source page's connection test
        if not isinstance(document, dict) or document.get("type") != "supervisor.action":
            return 400, {"error": 'expected {"type": "supervisor.action", "action": {...}}'}
        action = document.get("action")
        if not isinstance(action, dict):
            return 400, {"error": "action must be an object"}
        return self.server.answer(key, action)

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass  # the command logs what it answered; no access log on stderr


def serve(listen: str, secret: str, fleet: Fleet, sink, pacer: Pacer, log) -> Receiver:
    """A receiver answering on `listen` (HOST:PORT) in a thread of its own. Raises
    ValueError or OSError when it cannot listen there."""
    host, _, port = listen.rpartition(":")
    address = (host.strip("[]") or "127.0.0.1", int(port))
    receiver = Receiver(address, secret, fleet, sink, pacer, log)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    return receiver
