"""How the demo fleet's events reach Supervisor: over the HTTP API (`ApiSink`, retried
until taken) or in-process into a source (`SourceSink`), paced in real time (`Pacer`),
held through outages (`Outages`) and cut into batches the API takes.

Every post is retried until it is taken: event ids make a resend a duplicate, so
nothing is lost or doubled.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from django.db import transaction

from supervisor.demo.fleet import Fleet, FleetTask

MAX_BATCH_EVENTS = 1000  # contract §1
MAX_BATCH_BYTES = 900 * 1024  # under the 1 MiB limit, with room for the envelope
STARTUP_ATTEMPTS = 3  # before the first success, a dead URL is a mistake, not an outage
BACKOFF_CAP = 30.0


class FatalSend(Exception):
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
        from supervisor.core.ingest.apply import do_ingest

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
            raise ValueError(
                f"--outage {text!r}: expected AT:FOR in seconds, e.g. 100:75"
            ) from None
        if not sep or start < 0 or length <= 0:
            raise ValueError(f"--outage {text!r}: AT must be >= 0 and FOR above 0")
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


def send_fleet(
    fleet: Fleet,
    sink,
    pacer: Pacer,
    outages: Outages,
    manifest: Path | None = None,
    announce: Callable[[FleetTask], None] | None = None,
) -> int:
    """Send the fleet's events as they fall due (held through outages); returns how
    many were sent. `announce` hears of each task as the fleet delegates it; the
    manifest, if any, is rewritten every few seconds."""
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
                if announce is not None:
                    announce(fleet.tasks[announced])
                announced += 1
            if manifest and time.monotonic() - last_manifest > 2:
                write_manifest(fleet, manifest)
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


def interrupt(fleet: Fleet, sink) -> int:
    """What an orchestrator does when it shuts down: its unfinished runs and tasks are
    reported interrupted, so none of them reads as stuck afterwards. Returns how many
    events said so; raises FatalSend or OSError when they could not be sent."""
    events = fleet.interrupt_all()
    for batch in batches(events):
        sink.send(batch)
    return len(events)


def write_manifest(fleet: Fleet, path: Path | None) -> None:
    """The fleet's tasks, failures and expected flags, replaced whole (never half-written)."""
    if path is None:
        return
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(fleet.manifest(), indent=1, ensure_ascii=False))
    os.replace(temporary, path)
