"""Clients of a fault stack: threads that post batches of events and retry each until
it is answered 200, keeping count of every answer on the way."""

from __future__ import annotations

import http.client
import json
import queue
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

UNAVAILABLE_WORDS = "database is unavailable"


@dataclass
class Tally:
    batches: int = 0
    events: int = 0  # events sent (each once, whatever the retries)
    accepted: int = 0  # summed over the 200 answers
    duplicates: int = 0  # events a 200 called duplicates: a retry of a stored batch
    attempts: int = 0  # requests made, retries included
    statuses: Counter = field(default_factory=Counter)
    connection_errors: Counter = field(default_factory=Counter)  # by exception name
    unavailable: int = 0  # 503 with Retry-After and the JSON error naming the database
    slowest_s: float = 0.0  # the longest single request, whatever its answer
    slowest_503_s: float = 0.0
    problems: list[str] = field(default_factory=list)  # anything else: a failure

    def figures(self) -> dict:
        return {
            "batches": self.batches,
            "events_sent": self.events,
            "accepted": self.accepted,
            "duplicates_answered": self.duplicates,
            "requests": self.attempts,
            "statuses": dict(sorted((str(k), v) for k, v in self.statuses.items())),
            "connection_errors": dict(self.connection_errors),
            "answered_503": self.unavailable,
            "slowest_request_s": round(self.slowest_s, 2),
            "slowest_503_s": round(self.slowest_503_s, 2),
        }


class Ingest:
    """`clients` threads post `batches` (each a list of events) to /api/v1/events, each
    batch until a 200: after a connection error at once (a fresh connection), after a
    503 once its Retry-After has passed. Anything else is recorded as a problem."""

    def __init__(self, port: int, token: str, batches: list[list[dict]], clients: int = 2):
        self.port, self.token, self.clients = port, token, clients
        self.todo: queue.Queue[int] = queue.Queue()
        self.bodies = [json.dumps({"events": b}).encode() for b in batches]
        self.sizes = [len(b) for b in batches]
        for i in range(len(batches)):
            self.todo.put(i)
        self.tally = Tally(batches=len(batches), events=sum(self.sizes))
        self.done = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._client, daemon=True) for _ in range(clients)]

    def start(self) -> Ingest:
        for thread in self.threads:
            thread.start()
        return self

    def wait_done(self, fraction: float, timeout: float = 120) -> None:
        """Until at least `fraction` of the batches were answered 200."""
        deadline = time.monotonic() + timeout
        while self.done < fraction * len(self.bodies):
            if time.monotonic() > deadline:
                raise AssertionError(f"only {self.done} of {len(self.bodies)} batches in time")
            time.sleep(0.02)

    def join(self, timeout: float = 180) -> Tally:
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        if any(t.is_alive() for t in self.threads):
            self.stopping.set()
            self.tally.problems.append(f"ingest not finished within {timeout} s")
        return self.tally

    def _client(self) -> None:
        conn = None
        while not self.stopping.is_set():
            try:
                i = self.todo.get_nowait()
            except queue.Empty:
                break
            while not self.stopping.is_set():
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                started = time.monotonic()
                try:
                    conn.request(
                        "POST",
                        "/api/v1/events",
                        body=self.bodies[i],
                        headers={
                            "Authorization": f"Bearer {self.token}",
                            "Content-Type": "application/json",
                        },
                    )
                    response = conn.getresponse()
                    raw = response.read()
                except (OSError, http.client.HTTPException) as exc:
                    conn.close()
                    conn = None  # sending the same batch again is safe: ids dedupe
                    with self.lock:
                        self.tally.attempts += 1
                        self.tally.connection_errors[type(exc).__name__] += 1
                        self.tally.slowest_s = max(self.tally.slowest_s, time.monotonic() - started)
                    time.sleep(0.1)
                    continue
                took = time.monotonic() - started
                if self._answered(i, response, raw, took):
                    with self.lock:
                        self.done += 1
                    break
        if conn is not None:
            conn.close()

    def _answered(self, i: int, response, raw: bytes, took: float) -> bool:
        """Count one answer; True when the batch is stored."""
        status = response.status
        with self.lock:
            tally = self.tally
            tally.attempts += 1
            tally.statuses[status] += 1
            tally.slowest_s = max(tally.slowest_s, took)
            if status == 200:
                body = json.loads(raw)
                tally.accepted += body["accepted"]
                tally.duplicates += body["duplicates"]
                if body["rejected"] or body["accepted"] + body["duplicates"] != self.sizes[i]:
                    tally.problems.append(f"batch {i}: {str(body)[:300]}")
                return True
            if status == 503:
                tally.slowest_503_s = max(tally.slowest_503_s, took)
                retry_after = response.getheader("Retry-After")
                try:
                    error = json.loads(raw)["error"]
                except (ValueError, KeyError, TypeError):
                    error = None
                if retry_after and retry_after.isdigit() and error and UNAVAILABLE_WORDS in error:
                    tally.unavailable += 1
                else:
                    tally.problems.append(
                        f"batch {i}: 503 without Retry-After or JSON error: "
                        f"{retry_after!r} {raw[:200]!r}"
                    )
                wait = int(retry_after) if retry_after and retry_after.isdigit() else 1
            else:
                tally.problems.append(f"batch {i}: HTTP {status} {raw[:300]!r}")
                wait = 1
        time.sleep(wait)
        return False


def login(port: int, username: str, password: str) -> str:
    """The Cookie header of a logged-in session (through the login form, CSRF and all)."""
    import requests

    base = f"http://127.0.0.1:{port}"
    session = requests.Session()
    session.get(f"{base}/login/", timeout=10).raise_for_status()
    answer = session.post(
        f"{base}/login/",
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        headers={"Referer": f"{base}/login/"},
        allow_redirects=False,
        timeout=10,
    )
    assert answer.status_code == 302, f"login failed: {answer.status_code}"
    return "; ".join(f"{k}={v}" for k, v in session.cookies.items())
