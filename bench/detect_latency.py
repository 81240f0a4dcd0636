"""Detection latency under load: from the POST of a flag's decisive event to the flag
being open, while a background stream of other events keeps the system busy.

Each run, on a fresh PostgreSQL database with Redis as the broker: migrate, create a
source, start the web server (daphne), a Celery worker (concurrency 2) and beat as
`make run` (`manage.py up`) starts them; then

- a background load: the events of a `bench/history.py` history (cycled, each cycle
  under ids of its own), 10 batches of 100 a second (`--rate`, `--bg-batch`), each batch
  sent on schedule by the next free one of 2 keep-alive clients; the load actually
  achieved (events answered per second during the probes) is reported;
- after a warm-up, a probe every 0.5 s (`--gap`; sent on schedule, not waiting for the
  earlier probes' flags): each POSTs a small self-contained scenario on a new thread
  (`thread.seen`, then a `tool.rejected` with code `parent_not_active`, its last and
  decisive event: `delegation_rejected` opens on that thread as soon as an evaluation
  sees it). One read-only connection polls the `core_flag` table directly (every 10 ms)
  for the flags of all pending probes. Latency = from sending the POST to seeing the open
  row; the flag's own `opened_at` minus the POST's send time (same machine, same clock)
  is kept as a cross-check (it is earlier by the evaluation's commit and the poll). A
  probe whose flag is not open after `--probe-timeout` counts as that long.

p50 and p99 are nearest-rank over a run's probes (p99 of 100 probes: the second worst);
the tables give medians over runs.

    python bench/detect_latency.py --runs 1 --probes 10 --no-docs      # try it
    python bench/detect_latency.py --runs 3 --baseline HEAD             # the figures

`--snapshot REV` measures a clean `git archive` of a commit instead of the working tree;
`--baseline REV` measures REV as well ("before", interleaved run by run with the code
under test, "after"). Results go to stdout, `--json FILE`, and, unless `--no-docs`, into
docs/benchmarks.md between `<!-- detect_latency:begin -->` and `<!-- detect_latency:end -->`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import launch  # noqa: E402  (re-executes under .venv first)
from history import generate  # noqa: E402
from launch import (  # noqa: E402
    ROOT,
    PostgresStore,
    Services,
    checkout,
    cpu_delta,
    cpu_snapshot,
    fmt,
    free_port,
    leftovers,
    machine,
    manage,
    median,
    ratio,
    relabel,
    require_services,
)

BEGIN, END = "<!-- detect_latency:begin -->", "<!-- detect_latency:end -->"
HEADING = "## Detection latency under load (bench/detect_latency.py)"
GOAL_P99_MS = 250
KIND = "delegation_rejected"


def stamp(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def percentile(values: list[float], p: float) -> float | None:
    """Nearest rank."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


class Background:
    """Posts `rate` events a second in batches, on schedule, from `clients` connections."""

    def __init__(self, port, token, events, rate, batch, clients, tag, timeout=60):
        self.port, self.token, self.events = port, token, events
        self.rate, self.batch, self.clients, self.tag = rate, batch, clients, tag
        self.timeout = timeout
        self.lock = threading.Lock()
        self.next = 0
        self.done: list[tuple[float, int]] = []  # (response time, events) of each batch
        self.errors: list[str] = []
        self.late = 0  # batches sent more than one period after their due time
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._client, daemon=True) for _ in range(clients)]
        self.per_cycle = max(1, len(events) // batch)
        self.start_at = 0.0

    def _take(self) -> tuple[int, float]:
        with self.lock:
            k = self.next
            self.next += 1
        return k, self.start_at + k * self.batch / self.rate

    def _body(self, k: int) -> bytes:
        cycle, i = divmod(k, self.per_cycle)
        chunk = self.events[i * self.batch : (i + 1) * self.batch]
        return json.dumps({"events": relabel(chunk, f"{self.tag}c{cycle}")}).encode()

    def _client(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            while not self.stopping.is_set():
                k, due = self._take()
                body = self._body(k)
                wait = due - time.perf_counter()
                if wait > 0 and self.stopping.wait(wait):
                    return
                if wait < -self.batch / self.rate:
                    with self.lock:
                        self.late += 1
                try:
                    conn.request("POST", "/api/v1/events", body=body, headers=headers)
                    resp = conn.getresponse()
                    raw = resp.read()
                except (OSError, http.client.HTTPException) as exc:
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
                    with self.lock:
                        self.errors.append(f"background batch {k}: {exc!r}")
                    continue
                now = time.perf_counter()
                if resp.status != 200:
                    with self.lock:
                        self.errors.append(
                            f"background batch {k}: HTTP {resp.status} {raw[:200]!r}"
                        )
                    continue
                answer = json.loads(raw)
                with self.lock:
                    self.done.append((now, answer["accepted"] + answer["duplicates"]))
                    if answer["rejected"]:
                        self.errors.append(f"background batch {k}: {str(answer)[:200]}")
        finally:
            conn.close()

    def start(self) -> None:
        self.start_at = time.perf_counter()
        for t in self.threads:
            t.start()

    def stop(self) -> None:
        self.stopping.set()
        for t in self.threads:
            t.join(self.timeout + 5)

    def rate_between(self, a: float, b: float) -> float | None:
        with self.lock:
            n = sum(events for at, events in self.done if a <= at <= b)
        return n / (b - a) if b > a else None


@dataclass
class RunResult:
    code: str
    run: int
    ok: bool = False
    problems: list[str] = field(default_factory=list)  # the run failed
    # Slow flags and a load short of the target are what is measured (a missed probe
    # counts at the timeout, the load as achieved): noted, not failures.
    notes: list[str] = field(default_factory=list)
    probes: int = 0
    missed: int = 0  # flag not open within --probe-timeout
    p50_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    first10_p50_ms: float | None = None  # median of the first 10 probes
    last10_p50_ms: float | None = None  # and of the last 10: does the delay grow?
    opened_p50_ms: float | None = None  # opened_at - POST sent (cross-check)
    opened_p99_ms: float | None = None
    post_p50_ms: float | None = None  # the probe POST's own round trip
    post_p99_ms: float | None = None
    load_events_per_s: float | None = None  # background achieved during the probes
    late_batches: int = 0
    background_errors: int = 0
    backlog_at_end: int | None = None
    cpu: dict = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    load_before: float | None = None
    var: str = ""


def probe_body(thread: str, n: int) -> bytes:
    """A small self-contained scenario whose last event opens `delegation_rejected`."""
    at = stamp(datetime.now(UTC))
    events = [
        {
            "id": f"probe-{n}-seen",
            "type": "thread.seen",
            "at": at,
            "data": {"thread": thread, "title": f"Probe {n}"},
        },
        {
            "id": f"probe-{n}-rejected",
            "type": "tool.rejected",
            "at": at,
            "data": {
                "thread": thread,
                "tool": "delegate_task",
                "code": "parent_not_active",
                "message": "Cannot delegate: the parent run is not active.",
                "caller": "native_subagent",
            },
        },
    ]
    return json.dumps({"events": events}).encode()


class Prober:
    """Sends a probe every `gap` s (not waiting for earlier ones' flags) and watches the
    flag table for all pending ones from one read-only connection."""

    SQL = (
        "SELECT subject_id, opened_at FROM core_flag WHERE subject_type = 'thread' "
        "AND kind = %s AND state = 'open' AND subject_id = ANY(%s)"
    )

    def __init__(self, args, port: int, token: str, poll_conn, number: int):
        self.args, self.port, self.token, self.conn = args, port, token, poll_conn
        self.number = number
        self.lock = threading.Lock()
        self.pending: dict[str, tuple[float, float]] = {}  # thread -> (sent perf, sent wall)
        self.latency_ms: dict[str, float] = {}
        self.opened_ms: dict[str, float] = {}
        self.post_ms: list[float] = []
        self.missed = 0
        self.sending = True
        self.errors: list[str] = []

    def poll(self) -> None:
        while True:
            with self.lock:
                waiting = dict(self.pending)
                if not waiting and not self.sending:
                    return
            if waiting:
                rows = self.conn.execute(self.SQL, (KIND, list(waiting))).fetchall()
                now = time.perf_counter()
                with self.lock:
                    for thread, opened_at in rows:
                        sent, sent_wall = self.pending.pop(thread)
                        self.latency_ms[thread] = (now - sent) * 1000
                        self.opened_ms[thread] = (opened_at.timestamp() - sent_wall) * 1000
                    for thread, (sent, _) in list(self.pending.items()):
                        if now - sent > self.args.probe_timeout:
                            del self.pending[thread]
                            self.latency_ms[thread] = self.args.probe_timeout * 1000
                            self.missed += 1
            time.sleep(self.args.poll)

    def run(self, check) -> float:
        """Send the probes; return when every flag is open or timed out."""
        poller = threading.Thread(target=self.poll, daemon=True)
        poller.start()
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        start = time.perf_counter()
        try:
            for n in range(self.args.probes):
                due = start + n * self.args.gap
                time.sleep(max(0.0, due - time.perf_counter()))
                check()
                thread = f"thread:probe-{self.number}-{n:04d}"
                body = probe_body(thread, n)
                conn = http.client.HTTPConnection(
                    "127.0.0.1", self.port, timeout=self.args.probe_timeout
                )
                conn.connect()
                try:
                    sent_wall, sent = time.time(), time.perf_counter()
                    with self.lock:
                        self.pending[thread] = (sent, sent_wall)
                    conn.request("POST", "/api/v1/events", body=body, headers=headers)
                    resp = conn.getresponse()
                    raw = resp.read()
                    self.post_ms.append((time.perf_counter() - sent) * 1000)
                finally:
                    conn.close()
                if resp.status != 200 or json.loads(raw)["accepted"] != 2:
                    raise RuntimeError(f"probe {n}: HTTP {resp.status} {raw[:300]!r}")
        finally:
            with self.lock:
                self.sending = False
            poller.join(self.args.probe_timeout + 10)
        return time.perf_counter()


def one_run(args, code: str, tree: Path, number: int, background_events) -> RunResult:
    import psycopg

    var = Path(tempfile.mkdtemp(prefix=f"supervisor-bench-latency-{code}-"))
    result = RunResult(code, number, var=str(var))
    store = PostgresStore(args, var)
    env = store.env()
    services = background = poll_conn = None
    result.load_before = os.getloadavg()[0]
    try:
        store.create()
        manage(env, "migrate", "--noinput", "-v", "0", tree=tree)
        token = manage(env, "create_source", "bench", "--scopes", "ingest,read", tree=tree)
        token = token.stdout.strip()
        services = Services(env, var, free_port(), None, tree=tree)
        services.start()
        services.wait_ready(token)
        poll_conn = psycopg.connect(store.url, autocommit=True, connect_timeout=10)
        poll_conn.execute("SET default_transaction_read_only = on")
        background = Background(
            services.port,
            token,
            background_events,
            args.rate,
            args.bg_batch,
            args.bg_clients,
            f"r{number}",
        )
        background.start()
        time.sleep(args.warmup)
        cpu0 = cpu_snapshot(services, store)
        first = time.perf_counter()
        prober = Prober(args, services.port, token, poll_conn, number)
        prober.run(services.check_alive)
        order = sorted(prober.latency_ms)  # probe threads are numbered in sending order
        result.latencies_ms = [round(prober.latency_ms[t], 1) for t in order]
        result.missed = prober.missed
        opened_ms, post_ms = list(prober.opened_ms.values()), prober.post_ms
        last = time.perf_counter()  # the last flag open (or timed out)
        cpu1 = cpu_snapshot(services, store)
        result.cpu = cpu_delta(cpu0, cpu1)
        result.load_events_per_s = background.rate_between(first, last)
        background.stop()
        result.late_batches = background.late
        result.background_errors = len(background.errors)
        if background.errors:
            result.problems.append(
                f"{len(background.errors)} background error(s), e.g. {background.errors[0]}"
            )
        result.backlog_at_end = store.backlog()
        lat = result.latencies_ms
        result.probes = len(lat)
        result.p50_ms, result.p99_ms = percentile(lat, 50), percentile(lat, 99)
        result.max_ms = max(lat) if lat else None
        result.first10_p50_ms = percentile(lat[:10], 50)
        result.last10_p50_ms = percentile(lat[-10:], 50)
        result.opened_p50_ms = percentile(opened_ms, 50)
        result.opened_p99_ms = percentile(opened_ms, 99)
        result.post_p50_ms, result.post_p99_ms = percentile(post_ms, 50), percentile(post_ms, 99)
        if result.missed:
            result.notes.append(
                f"{result.missed} probe(s) not open within "
                f"{args.probe_timeout:g} s (counted as {args.probe_timeout:g} s)"
            )
        if result.load_events_per_s is not None and result.load_events_per_s < 0.9 * args.rate:
            result.notes.append(
                f"background load {result.load_events_per_s:.0f} events/s, "
                f"below 90% of {args.rate:g}"
            )
        services.check_alive()
        services.stop()
        result.problems += leftovers(services)
        result.ok = not result.problems
        return result
    except Exception as exc:  # noqa: BLE001 - a failed run is reported, not fatal
        result.problems.append(f"{type(exc).__name__}: {exc}")
        return result
    finally:
        if background is not None:
            background.stop()
        if poll_conn is not None:
            poll_conn.close()
        if services is not None:
            services.stop()
            left = leftovers(services)
            if left and result.ok:
                result.problems += left
                result.ok = False
        store.close()
        try:
            store.drop()
        except Exception as exc:  # noqa: BLE001
            result.problems.append(f"drop: {exc}")
        if result.ok and not args.keep:
            shutil.rmtree(var, ignore_errors=True)


# --- output ----------------------------------------------------------------------------


def tables(results: list[RunResult], codes: list[str], args) -> str:
    two = len(codes) == 2

    def med(key, code):
        return median([getattr(r, key) for r in results if r.ok and r.code == code])

    head = "| figure (median of the correct runs) | " + " | ".join(codes)
    head += " | after / before" if two else ""
    head += " | goal | figure / goal |"
    sep = "|---|" + "---:|" * len(codes) + ("---:|" if two else "") + "---:|---:|"

    def row(label, key, digits=0, goal=None, goal_text=""):
        values = [med(key, c) for c in codes]
        cells = [label, *(fmt(v, digits) for v in values)]
        cells += [ratio(values[1], values[0])] if two else []
        cells += [goal_text, ratio(values[-1], goal) if goal and values[-1] is not None else ""]
        return "| " + " | ".join(cells) + " |"

    def count(code):
        runs = [r for r in results if r.code == code]
        return f"{sum(r.ok for r in runs)} of {len(runs)}"

    lines = [
        head,
        sep,
        row("POST → flag open, p50 ms", "p50_ms"),
        row("POST → flag open, p99 ms", "p99_ms", 0, GOAL_P99_MS, f"< {GOAL_P99_MS}"),
        row("POST → flag open, worst ms", "max_ms"),
        row("cross-check: `opened_at` − POST sent, p50 ms", "opened_p50_ms"),
        row("cross-check: `opened_at` − POST sent, p99 ms", "opened_p99_ms"),
        row("the probe POST's own round trip, p50 ms", "post_p50_ms"),
        row("the probe POST's own round trip, p99 ms", "post_p99_ms"),
        row(
            f"background load achieved, events/s (target {args.rate:,g})",
            "load_events_per_s",
            0,
            args.rate,
            f"{args.rate:,g}",
        ),
        row("subjects awaiting evaluation at the end", "backlog_at_end"),
        "| correct runs | "
        + " | ".join(count(c) for c in codes)
        + (" | " if two else "")
        + " | | |",
    ]
    names = (
        ("web", "web server"),
        ("worker", "worker (main + pool)"),
        ("beat", "beat"),
        ("db", "PostgreSQL backends"),
        ("client", "benchmark client (load, probes, polling)"),
        ("others", "other processes on the machine (noise)"),
    )
    for name, label in names:
        values = [median([r.cpu.get(name) for r in results if r.ok and r.code == c]) for c in codes]
        cells = [f"CPU s during the probes: {label}", *(fmt(v) for v in values)]
        cells += [ratio(values[1], values[0])] if two else []
        lines.append("| " + " | ".join(cells) + " | | |")
    lines += [
        "",
        "Each run:",
        "",
        "| code | run | ok | probes | p50 ms | p99 ms | worst ms | first / last 10 probes p50 ms "
        "| opened_at p50 / p99 ms "
        "| POST p50 / p99 ms | load events/s | late batches | load before | problems, notes |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        cells = [
            r.code,
            str(r.run),
            "yes" if r.ok else "NO",
            str(r.probes),
            fmt(r.p50_ms, 0),
            fmt(r.p99_ms, 0),
            fmt(r.max_ms, 0),
            f"{fmt(r.first10_p50_ms, 0)} / {fmt(r.last10_p50_ms, 0)}",
            f"{fmt(r.opened_p50_ms, 0)} / {fmt(r.opened_p99_ms, 0)}",
            f"{fmt(r.post_p50_ms, 0)} / {fmt(r.post_p99_ms, 0)}",
            fmt(r.load_events_per_s, 0),
            str(r.late_batches),
            fmt(r.load_before, 2),
            "; ".join(r.problems + r.notes).replace("|", "/"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--probes", type=int, default=100, help="probes per run")
    parser.add_argument("--rate", type=float, default=1000, help="background events/s")
    parser.add_argument("--bg-batch", type=int, default=100, help="events per background POST")
    parser.add_argument("--bg-clients", type=int, default=2, help="background connections")
    parser.add_argument("--tasks", type=int, default=1500, help="background history size (cycled)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--warmup", type=float, default=10, help="s of load before the probes")
    parser.add_argument(
        "--gap", type=float, default=0.5, help="s between probes (sent without waiting)"
    )
    parser.add_argument("--poll", type=float, default=0.01, help="s between flag polls")
    parser.add_argument("--probe-timeout", type=float, default=30)
    parser.add_argument(
        "--sweep-interval",
        type=float,
        default=5.0,
        help="beat's sweep interval, s (5: `make run`'s default)",
    )
    parser.add_argument(
        "--pg-url", default="postgres://postgres@127.0.0.1:5432/supervisor_bench_latency"
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/11")
    parser.add_argument(
        "--snapshot",
        metavar="REV",
        help="measure a clean `git archive` of this commit instead of the working tree",
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also measure this commit (e.g. HEAD) as 'before', interleaved run by run",
    )
    parser.add_argument("--keep", action="store_true", help="keep each run's var dir")
    parser.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks.md")
    parser.add_argument("--json", metavar="FILE", help="also write every run's figures here")
    args = parser.parse_args(argv)

    require_services(args.pg_url, args.redis_url)
    PostgresStore(args, Path("."))  # refuses a database not named supervisor_bench*
    about = machine(["postgres"], args)
    trees: dict[str, tuple[Path, str]] = {}
    if args.baseline:
        trees["before"] = checkout(args.baseline, untracked=True)
    trees["after"] = checkout(args.snapshot, untracked=True)
    codes = list(trees)
    started = datetime.now(UTC)
    background_events = generate(args.tasks, seed=args.seed).events

    results: list[RunResult] = []

    def save_json():
        if args.json:
            Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))

    for number in range(1, args.runs + 1):
        for code in codes:
            t = time.perf_counter()
            r = one_run(args, code, trees[code][0], number, background_events)
            results.append(r)
            save_json()
            print(
                f"{code} run {number}: {'ok' if r.ok else 'FAILED'} in "
                f"{time.perf_counter() - t:.0f} s; {r.probes} probes, p50 {fmt(r.p50_ms, 0)} ms, "
                f"p99 {fmt(r.p99_ms, 0)} ms, worst {fmt(r.max_ms, 0)} ms; opened_at p50 "
                f"{fmt(r.opened_p50_ms, 0)} ms; load {fmt(r.load_events_per_s, 0)} events/s "
                f"({r.late_batches} late batches); backlog at end {r.backlog_at_end}; "
                f"cpu {r.cpu}; load before {r.load_before}"
                + (f"; notes: {r.notes}" if r.notes else "")
                + (f"; problems: {r.problems}; files in {r.var}" if r.problems else ""),
                flush=True,
            )

    command = f"python bench/detect_latency.py --runs {args.runs} --probes {args.probes}"
    command += f" --rate {args.rate:g}" if args.rate != 1000 else ""
    command += f" --baseline {args.baseline}" if args.baseline else ""
    command += f" --snapshot {args.snapshot}" if args.snapshot else ""
    code_lines = [f"- {c}: {trees[c][1]}" for c in codes]
    text = "\n".join(
        [
            f"Measured {started:%Y-%m-%d %H:%M} UTC on {about}.",
            "",
            "Code:" if len(codes) > 1 else f"Code: {trees['after'][1]}.",
            *(code_lines if len(codes) > 1 else []),
            "",
            f"Reproduce: `{command}` (PostgreSQL with Redis as the broker; web server, worker "
            f"(concurrency 2) and beat as `make run` starts them, sweep every "
            f"{args.sweep_interval:g} s; background: {args.rate:,g} events/s in batches of "
            f"{args.bg_batch} from {args.bg_clients} clients, after {args.warmup:g} s of "
            f"warm-up; a probe every {args.gap:g} s, the flag table polled every "
            f"{args.poll * 1000:g} ms; nearest-rank percentiles).",
            "",
            tables(results, codes, args),
        ]
    )
    print()
    print(text)
    save_json()
    if not args.no_docs:
        launch.write_block(BEGIN, END, text, HEADING)
        print(f"\nwrote {launch.DOCS.relative_to(ROOT)}")
    for tree, _ in trees.values():
        if tree != ROOT:
            shutil.rmtree(tree, ignore_errors=True)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
