"""`manage.py simulate`: run a simulated orchestrator fleet against Supervisor.

The fleet's events (`connectors.simulator.fleet`) go out paced in real time by `--speed`,
over the HTTP API (`--url`, `--token`) or in-process into a source (`--source`). With
`--listen`, it also serves a webhook receiver that answers Supervisor's actions the way
an orchestrator would (`connectors.simulator.answers`), posting the answer back as
events. Every post is retried until it is taken: event ids make a resend a duplicate,
so nothing is lost or doubled.

`--demo` is what `make run` starts: a trickle with short durations whose first episodes
carry every failure, timed against short detection settings, so that every kind of
flag shows within five minutes. `--outage AT:FOR` withholds the events falling due in
that window and sends them when it ends (a follower down, then catching up: the source
goes silent). `--interrupt-on-stop` reports the unfinished runs and tasks `interrupted`
on Ctrl-C or SIGTERM, as an orchestrator does when it shuts down.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connections, transaction

from supervisor.connectors.simulator.answers import answer_events, view_from_fleet
from supervisor.connectors.simulator.fleet import (
    DEMO_DETECTION,
    DEMO_DURATIONS,
    DEMO_OPENING,
    DEMO_RATE,
    FAILURES,
    Fleet,
)
from supervisor.connectors.webhook import signing
from supervisor.core import clock
from supervisor.core.connectors import Outgoing
from supervisor.core.snapshot import DetectionSettings

MAX_BATCH_EVENTS = 1000  # contract §1
MAX_BATCH_BYTES = 900 * 1024  # under the 1 MiB limit, with room for the envelope
MAX_BODY = 1024 * 1024  # an action body larger than this is not Supervisor's
STARTUP_ATTEMPTS = 3  # before the first success, a dead URL is a mistake, not an outage
BACKOFF_CAP = 30.0


class FatalSend(CommandError):
    """Supervisor refused the events for good (token, scope, size): stop and say why."""


class ApiSink:
    """POSTs batches to `/api/v1/events`, retrying transient failures with backoff."""

    def __init__(self, url: str, token: str, log):
        self.endpoint = url.rstrip("/") + "/api/v1/events"
        self.token = token
        self.log = log
        self.reached = False
        self.totals = Counter()
        self.lock = threading.Lock()

    def describe(self) -> str:
        return self.endpoint

    def send(self, events: list[dict]) -> None:
        body = json.dumps({"events": events}, ensure_ascii=False).encode()
        attempt = 0
        while True:
            try:
                answer = self._post(body)
            except FatalSend:
                raise
            except TransientSend as exc:
                attempt += 1
                if not self.reached and attempt >= STARTUP_ATTEMPTS:
                    raise FatalSend(
                        f"cannot reach Supervisor at {self.endpoint}: {exc} "
                        "(check --url and that the server is running)"
                    ) from None
                pause = min(BACKOFF_CAP, 0.5 * 2 ** (attempt - 1))
                self.log(f"{exc}; sending again in {pause:g} s (attempt {attempt + 1})")
                time.sleep(pause)
                continue
            self.reached = True
            with self.lock:
                self.totals["accepted"] += answer.get("accepted", 0)
                self.totals["duplicates"] += answer.get("duplicates", 0)
                self.totals["rejected"] += len(answer.get("rejected", []))
            for rejected in answer.get("rejected", [])[:5]:
                self.log(f"event {rejected.get('id')} rejected: {rejected.get('error')}")
            return

    def _post(self, body: bytes) -> dict:
        request = urllib.request.Request(self.endpoint, data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            with exc:
                text = exc.read(2000).decode("utf-8", errors="replace")
            raise refusal(exc.code, text, self.endpoint) from None
        except urllib.error.URLError as exc:
            raise TransientSend(f"cannot connect to {self.endpoint}: {exc.reason}") from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise TransientSend(f"lost the connection to {self.endpoint}: {exc}") from None


class TransientSend(Exception):
    pass


def refusal(status: int, text: str, endpoint: str) -> Exception:
    try:
        why = json.loads(text).get("error") or text
    except (ValueError, AttributeError):
        why = text
    why = " ".join(str(why).split())[:300]
    if status in (408, 425, 429) or status >= 500:
        return TransientSend(f"Supervisor answered {status} ({why})")
    hint = {
        401: "the token is missing or wrong: check --token",
        403: "the token lacks the ingest scope: create one with --scopes ingest,...",
        404: f"{endpoint} is not Supervisor's events API: check --url",
        413: "a batch was too large for Supervisor",
    }.get(status, "Supervisor refused the events")
    return FatalSend(f"{hint} ({status}: {why})")


class SourceSink:
    """Applies batches in-process to a source, as the API would, evaluation on commit."""

    def __init__(self, source):
        self.source = source
        self.totals = Counter()
        self.lock = threading.Lock()

    def describe(self) -> str:
        return f"source {self.source.name} (in-process)"

    def send(self, events: list[dict]) -> None:
        from supervisor.core.ingest import do_ingest

        with transaction.atomic():
            result = do_ingest(self.source, events)
        with self.lock:
            self.totals["accepted"] += result.accepted
            self.totals["duplicates"] += result.duplicates
            self.totals["rejected"] += len(result.rejected)


class Pacer:
    """Virtual seconds of the fleet against real seconds: `speed` virtual per real."""

    def __init__(self, speed: float):
        self.speed = speed
        self.origin = time.monotonic()

    def virtual_now(self) -> float:
        return (time.monotonic() - self.origin) * self.speed

    def wait_until(self, virtual: float) -> float:
        """Seconds of real time until `virtual` is due (0 when it is)."""
        return max(0.0, self.origin + virtual / self.speed - time.monotonic())


class Outages:
    """Windows of virtual time, `(start, end)`, in which nothing is sent."""

    def __init__(self, windows: list[tuple[float, float]]):
        self.windows = sorted(windows)

    def holding_until(self, virtual: float) -> float | None:
        """The end of the outage `virtual` falls in, or None when sending is on."""
        for start, end in self.windows:
            if start <= virtual < end:
                return end
        return None

    @staticmethod
    def parse(text: str) -> tuple[float, float]:
        at, sep, duration = text.partition(":")
        try:
            start, length = float(at), float(duration)
        except ValueError:
            raise CommandError(
                f"--outage {text!r}: expected AT:FOR in seconds, e.g. 100:75"
            ) from None
        if not sep or start < 0 or length <= 0:
            raise CommandError(f"--outage {text!r}: AT must be >= 0 and FOR above 0")
        return start, start + length


def batches(events: list[dict]) -> Iterator[list[dict]]:
    """`events` cut into batches the API takes (count and size, contract §1)."""
    batch: list[dict] = []
    size = 0
    for event in events:
        encoded = len(json.dumps(event, ensure_ascii=False).encode())
        if batch and (len(batch) >= MAX_BATCH_EVENTS or size + encoded > MAX_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(event)
        size += encoded
    if batch:
        yield batch


class Stop(Exception):
    """SIGTERM: stop as on Ctrl-C (what `make run` sends its children)."""


def _stop_on_sigterm(signum, frame):
    raise Stop


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
        except CommandError as exc:
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


class Command(BaseCommand):
    help = (
        "Run a simulated orchestrator fleet (parents delegating tasks, with the field "
        "reports' failures mixed in) against Supervisor, over the HTTP API or in-process."
    )

    def add_arguments(self, parser):
        target = parser.add_argument_group("where the events go (one of)")
        target.add_argument("--url", help="Supervisor's base URL, e.g. http://127.0.0.1:8000")
        target.add_argument("--token", help="an ingest token (with --url)")
        target.add_argument("--source", help="a source name: ingest in-process, no HTTP")
        fleet = parser.add_argument_group("the fleet")
        fleet.add_argument("--seed", type=int, help="default: random (printed)")
        fleet.add_argument("--tasks", type=int, help="stop after N tasks (default: never)")
        fleet.add_argument(
            "--rate", type=float, default=2.0, help="tasks delegated per virtual minute (default 2)"
        )
        fleet.add_argument("--failure-rate", type=float, default=0.2, help="0..1 (default 0.2)")
        fleet.add_argument("--parents", type=int, default=3, help="parent threads (default 3)")
        fleet.add_argument(
            "--speed", type=float, default=1.0, help="virtual seconds per real second (default 1)"
        )
        fleet.add_argument(
            "--detection",
            help="detection durations the fleet is timed against, as JSON, e.g. "
            "'{\"stuck_after\": 300}' (default: the source's, else the built-in ones)",
        )
        fleet.add_argument(
            "--durations",
            type=float,
            default=1.0,
            help="scale the fleet's work and waits by this factor (default 1)",
        )
        fleet.add_argument(
            "--opening",
            help="failures the first episodes carry, in order, comma-separated "
            f"(from {', '.join(FAILURES)}; 'healthy' for none)",
        )
        fleet.add_argument(
            "--demo",
            action="store_true",
            help="make run's demo: a few tasks a minute, short durations and detection "
            "settings, every failure in the first episodes (flags within five minutes)",
        )
        fleet.add_argument(
            "--outage",
            action="append",
            default=[],
            metavar="AT:FOR",
            help="withhold the events due from AT for FOR virtual seconds, then send them "
            "(a follower down and catching up); repeatable",
        )
        fleet.add_argument(
            "--interrupt-on-stop",
            action="store_true",
            help="on Ctrl-C or SIGTERM, report unfinished runs and tasks interrupted",
        )
        fleet.add_argument("--manifest", help="write the tasks, failures and expected flags here")
        answer = parser.add_argument_group("answering actions (webhook receiver)")
        answer.add_argument("--listen", metavar="HOST:PORT", help="serve the webhook receiver")
        answer.add_argument(
            "--secret",
            default=os.environ.get("SUPERVISOR_SIMULATOR_SECRET"),
            help="the webhook connector's secret (with --listen; default: "
            "$SUPERVISOR_SIMULATOR_SECRET)",
        )

    def handle(self, *args, **options):
        self.verbosity = options["verbosity"]
        if options["demo"]:
            self._demo_defaults(options)
        sink, detection = self._target(options)
        self._check_numbers(options)
        outages = Outages([Outages.parse(text) for text in options["outage"]])
        seed = options["seed"] if options["seed"] is not None else random.randrange(1, 10**6)
        try:
            fleet = Fleet(
                seed,
                start=clock.now().replace(microsecond=0),
                parents=options["parents"],
                rate=options["rate"],
                failure_rate=options["failure_rate"],
                tasks=options["tasks"],
                settings=detection,
                opening=self._opening(options["opening"]),
                durations=options["durations"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        pacer = Pacer(options["speed"])
        self.stdout.write(
            f"Simulating seed {seed}: {options['tasks'] or 'unlimited'} tasks at "
            f"{options['rate']:g}/min, failure rate {options['failure_rate']:g}, speed "
            f"{options['speed']:g}, into {sink.describe()}"
        )
        receiver = self._listen(options, fleet, sink, pacer)
        manifest = Path(options["manifest"]) if options["manifest"] else None
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
        # A shell without job control starts background commands ignoring SIGINT; the
        # simulator stops on it wherever it was started.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            sent = self._run(fleet, sink, pacer, manifest, outages)
            self._write_manifest(fleet, manifest)
            self._summary(fleet, sink, sent)
            if receiver is not None:
                self.stdout.write("The fleet is done; still answering actions (Ctrl-C stops).")
                while True:
                    time.sleep(1)
        except (KeyboardInterrupt, Stop):
            # A second signal while stopping abandons what is left.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if receiver is not None:
                receiver.shutdown()
                receiver.server_close()
                receiver = None
            if options["interrupt_on_stop"]:
                self._interrupt(fleet, sink)
            self._write_manifest(fleet, manifest)
            self.stderr.write("Stopped (Ctrl-C).")
            sys.exit(130)
        finally:
            if receiver is not None:
                receiver.shutdown()
                receiver.server_close()

    def _demo_defaults(self, options) -> None:
        """`--demo` fills in what was not given; explicit options still win."""
        defaults = {
            "rate": (2.0, DEMO_RATE),
            "durations": (1.0, DEMO_DURATIONS),
            "opening": (None, ",".join(f or "healthy" for f in DEMO_OPENING)),
            "detection": (None, json.dumps(DEMO_DETECTION)),
        }
        for name, (default, demo) in defaults.items():
            if options[name] == default:
                options[name] = demo

    def _opening(self, text: str | None) -> list[str | None]:
        if not text:
            return []
        names = [part.strip() for part in text.split(",") if part.strip()]
        unknown = sorted({n for n in names if n != "healthy" and n not in FAILURES})
        if unknown:
            raise CommandError(
                f"--opening: unknown failure(s) {', '.join(unknown)}; "
                f"choose from {', '.join(FAILURES)} or healthy"
            )
        return [None if n == "healthy" else n for n in names]

    def _interrupt(self, fleet: Fleet, sink) -> None:
        """What an orchestrator does when it shuts down: its unfinished runs and tasks
        are reported interrupted, so none of them reads as stuck afterwards."""
        events = fleet.interrupt_all()
        try:
            for batch in batches(events):
                sink.send(batch)
        except (CommandError, OSError) as exc:
            self.stderr.write(f"could not report the unfinished work interrupted: {exc}")
            return
        if events:
            self.stderr.write(f"Reported {len(events)} unfinished run(s) and task(s) interrupted.")

    def _target(self, options):
        url, token, source_name = options["url"], options["token"], options["source"]
        if bool(url) == bool(source_name):
            raise CommandError("give either --url (with --token) or --source")
        overrides = {}
        if options["detection"]:
            try:
                overrides = json.loads(options["detection"])
            except ValueError as exc:
                raise CommandError(f"--detection is not JSON: {exc}") from None
            if not isinstance(overrides, dict):
                raise CommandError("--detection must be a JSON object")
            unknown = sorted(set(overrides) - set(DetectionSettings.__dataclass_fields__))
            if unknown:
                raise CommandError(f"--detection: unknown duration(s) {', '.join(unknown)}")
        if url:
            if not token:
                raise CommandError("--url needs --token (an ingest token from create_source)")
            if not url.startswith(("http://", "https://")):
                raise CommandError(f"--url must start with http:// or https:// (got {url!r})")
            return ApiSink(url, token, self._log), DetectionSettings.from_overrides(overrides)
        from supervisor.core.evaluate import detection_settings
        from supervisor.core.models import Source

        source = Source.objects.filter(name=source_name).first()
        if source is None:
            raise CommandError(f"no source named {source_name!r} (see create_source)")
        own = detection_settings(source.namespace_id)
        merged = {name: getattr(own, name) for name in DetectionSettings.__dataclass_fields__}
        return SourceSink(source), DetectionSettings.from_overrides(merged, overrides)

    def _check_numbers(self, options):
        if options["durations"] <= 0:
            raise CommandError("--durations must be above 0")
        if options["speed"] <= 0:
            raise CommandError("--speed must be above 0")
        if options["rate"] <= 0:
            raise CommandError("--rate must be above 0")
        if not 0 <= options["failure_rate"] <= 1:
            raise CommandError("--failure-rate must be between 0 and 1")
        if options["parents"] < 1:
            raise CommandError("--parents must be at least 1")
        if options["tasks"] is not None and options["tasks"] < 1:
            raise CommandError("--tasks must be at least 1")

    def _listen(self, options, fleet, sink, pacer) -> Receiver | None:
        if not options["listen"]:
            return None
        if not options["secret"]:
            raise CommandError("--listen needs --secret (the webhook connector's secret)")
        host, _, port = options["listen"].rpartition(":")
        try:
            address = (host.strip("[]") or "127.0.0.1", int(port))
            receiver = Receiver(address, options["secret"], fleet, sink, pacer, self._log)
        except (ValueError, OSError) as exc:
            raise CommandError(f"cannot listen on {options['listen']!r}: {exc}") from None
        threading.Thread(target=receiver.serve_forever, daemon=True).start()
        bound_host, bound_port = receiver.server_address[:2]
        self.stdout.write(f"Answering actions on http://{bound_host}:{bound_port}/")
        return receiver

    def _run(self, fleet: Fleet, sink, pacer: Pacer, manifest: Path | None, outages) -> int:
        """Send the fleet's events as they fall due (held through outages); returns how
        many were sent."""
        pending: list[dict] = []
        sent = 0
        announced = 0
        last_manifest = time.monotonic()

        def flush(force: bool = False):
            nonlocal pending, sent
            if not pending or (not force and outages.holding_until(pacer.virtual_now())):
                return
            for batch in batches(pending):
                sink.send(batch)
                sent += len(batch)
            pending = []

        try:
            for virtual, event in fleet.events():
                while (wait := pacer.wait_until(virtual)) > 0:
                    flush()
                    # An outage ending before the event is due sends what it held then.
                    end = outages.holding_until(pacer.virtual_now())
                    if end is not None and end < virtual:
                        time.sleep(pacer.wait_until(end))
                        continue
                    time.sleep(wait)
                pending.append(event)
                if len(pending) >= MAX_BATCH_EVENTS:
                    flush()
                while announced < len(fleet.tasks):
                    self._announce(fleet.tasks[announced])
                    announced += 1
                if manifest and time.monotonic() - last_manifest > 2:
                    self._write_manifest(fleet, manifest)
                    last_manifest = time.monotonic()
            # A fleet that ends inside an outage still waits for it to end.
            end = outages.holding_until(pacer.virtual_now())
            if end is not None:
                time.sleep(pacer.wait_until(end))
            flush(force=True)
        except (KeyboardInterrupt, Stop):
            # What fell due before the stop still goes out; a second Ctrl-C abandons it.
            flush(force=True)
            raise
        return sent

    def _announce(self, task) -> None:
        if self.verbosity < 1:
            return
        what = task.failure or "healthy"
        expect = ", ".join(task.expected_flags) or "no flags"
        self.stdout.write(f"{task.delegated_at} {task.task} [{task.shape}; {what}] → {expect}")

    def _summary(self, fleet: Fleet, sink, sent: int) -> None:
        totals = sink.totals
        kinds = Counter(kind for task in fleet.tasks for kind in task.expected_flags)
        kinds.update(kind for flags in fleet.thread_flags.values() for kind in flags)
        expected = ", ".join(f"{k} ×{n}" for k, n in sorted(kinds.items())) or "none"
        self.stdout.write(
            f"Sent {sent} events for {len(fleet.tasks)} tasks (accepted {totals['accepted']}, "
            f"duplicates {totals['duplicates']}, rejected {totals['rejected']}). "
            f"Expected flags by {fleet.manifest()['until']}: {expected}."
        )

    def _write_manifest(self, fleet: Fleet, path: Path | None) -> None:
        if path is None:
            return
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps(fleet.manifest(), indent=1, ensure_ascii=False))
        os.replace(temporary, path)

    def _log(self, message: str) -> None:
        self.stderr.write(message)
