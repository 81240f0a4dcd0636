"""Log-ins beside ingest: ingest's latency alone and beside a flood of wrong-password
log-ins, on PostgreSQL with Redis (issue 39: forty of them made ingest answer 503, its
p50 going from 0.06 s to 3.7 s, while the password hashes held the pooled connections).

Each run, on a fresh PostgreSQL database (Redis as the broker, the channel layer and the
cache), with the web server, a Celery worker (concurrency 2) and beat started as
`manage.py up` starts them (the pool as configured: 10 connections, 5 s timeout):

1. warm-up: `--warmup` batches, not timed;
2. ingest alone: one client posts `--batches` batches of `--batch` events of a history
   (bench/history.py), one after the other, `--pause` s apart (a follower's steady pace),
   timing each answer from the request sent to the body read (for at most `--seconds`:
   fewer batches when the answers are slow);
3. ingest beside log-ins: the same, while `--logins` clients each send wrong-password
   log-ins back to back (a browser's session: the log-in page's CSRF token and cookie,
   then POSTs with a new unknown name each, answers read whole; a refused one waits its
   `Retry-After`, as a client that wants its guesses checked does: `--ignore-retry-after`
   sends again at once, an HTTP flood), started `--ramp` s before the batches and
   stopped after them. The failed-log-in limits are off: an attack from many addresses
   meets none of them.

The figure is ingest's p50 beside the log-ins over its p50 alone (every answer counted,
503s included, and the 503s counted apart); the goal is at most 1.10. Figures are
medians of `--runs` runs; `--baseline REV` measures a clean `git archive` of REV as
well ("before"), interleaved run by run with the code under test ("after").

    python bench/login_flood.py --runs 1 --batches 30 --no-docs          # try it
    python bench/login_flood.py --runs 3 --baseline 63820a9              # the figures

Results go to stdout, `--json FILE`, and, unless `--no-docs`, into docs/benchmarks.md
between `<!-- login_flood:begin -->` and `<!-- login_flood:end -->`. Loopback only;
never part of `make test`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
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
    fmt,
    free_port,
    machine,
    manage,
    median,
    require_services,
)

BEGIN, END = "<!-- login_flood:begin -->", "<!-- login_flood:end -->"
HEADING = "## Log-ins beside ingest (bench/login_flood.py)"
GOAL_RATIO = 1.10
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@dataclass
class Phase:
    """One phase's ingest answers."""

    latencies: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def p50(self) -> float | None:
        return statistics.median(self.latencies) if self.latencies else None

    @property
    def p95(self) -> float | None:
        if not self.latencies:
            return None
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


@dataclass
class RunResult:
    code: str  # "before" (--baseline) or "after" (the code under test)
    run: int
    ok: bool = False
    problems: list[str] = field(default_factory=list)
    alone_p50_s: float | None = None
    alone_p95_s: float | None = None
    beside_p50_s: float | None = None
    beside_p95_s: float | None = None
    ratio: float | None = None
    alone_statuses: dict = field(default_factory=dict)
    beside_statuses: dict = field(default_factory=dict)
    logins: int = 0  # log-in answers received during phase 3
    login_statuses: dict = field(default_factory=dict)
    login_p50_s: float | None = None
    load_before: float | None = None
    var: str = ""


def post_batches(
    port: int, token: str, bodies: list[bytes], pause: float, timeout: float, seconds: float
):
    """POST each body in turn on one keep-alive connection, for at most `seconds`; every
    answer's time."""
    phase = Phase()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    deadline = time.monotonic() + seconds
    try:
        for body in bodies:
            if time.monotonic() > deadline:
                break
            sent = time.perf_counter()
            try:
                conn.request("POST", "/api/v1/events", body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                status = str(response.status)
            except (ConnectionError, http.client.HTTPException, TimeoutError) as exc:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
                status = type(exc).__name__
            phase.latencies.append(time.perf_counter() - sent)
            phase.statuses[status] = phase.statuses.get(status, 0) + 1
            time.sleep(pause)
    finally:
        conn.close()
    return phase


class LogInFlood:
    """`clients` threads sending wrong-password log-ins back to back until stopped."""

    def __init__(self, port: int, clients: int, timeout: float, obey: bool):
        self.port, self.timeout, self.obey = port, timeout, obey
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.statuses: dict[str, int] = {}
        self.latencies: list[float] = []
        self.counting = False
        self.threads = [
            threading.Thread(target=self._client, args=(n,), daemon=True) for n in range(clients)
        ]

    def _client(self, n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            conn.request("GET", "/login/")
            response = conn.getresponse()
            page = response.read().decode()
            cookie = response.getheader("Set-Cookie", "").split(";", 1)[0]
            token = CSRF.search(page).group(1)
            headers = {"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}
            tries = 0
            while not self.stopping.is_set():
                tries += 1
                form = {
                    "username": f"guess-{n}-{tries}",
                    "password": "wrong",
                    "csrfmiddlewaretoken": token,
                }
                sent = time.perf_counter()
                try:
                    conn.request("POST", "/login/", urllib.parse.urlencode(form), headers)
                    response = conn.getresponse()
                    response.read()
                    status = str(response.status)
                    wait = float(response.getheader("Retry-After") or 0)
                except (ConnectionError, http.client.HTTPException, TimeoutError) as exc:
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
                    status, wait = type(exc).__name__, 0.0
                with self.lock:
                    if self.counting:
                        self.latencies.append(time.perf_counter() - sent)
                        self.statuses[status] = self.statuses.get(status, 0) + 1
                if self.obey and wait:
                    self.stopping.wait(wait)
        finally:
            conn.close()

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(self.timeout + 5)


def one_run(args, code: str, number: int, tree: Path, bodies: list[bytes]) -> RunResult:
    var = Path(tempfile.mkdtemp(prefix=f"supervisor-bench-login-{code}-"))
    result = RunResult(code, number, var=str(var))
    store = PostgresStore(args, var)
    env = store.env()
    env.update(
        CHANNEL_LAYER_URL=args.layer_url,
        CACHE_URL=args.layer_url,
        # An attack from many addresses: the failed-log-in limits stop none of it.
        SUPERVISOR_LOGIN_RATE="0",
        SUPERVISOR_LOGIN_ADDRESS_RATE="0",
    )
    if args.password_checks:
        env["SUPERVISOR_PASSWORD_CHECKS"] = str(args.password_checks)
    services = None
    result.load_before = os.getloadavg()[0]
    warm = bodies[: args.warmup]
    alone = bodies[args.warmup : args.warmup + args.batches]
    beside = bodies[args.warmup + args.batches :]
    try:
        store.create()
        import redis

        redis.Redis.from_url(args.layer_url, socket_timeout=10).flushdb()
        manage(env, "migrate", "--noinput", "-v", "0", tree=tree)
        token = manage(
            env, "create_source", "bench", "--scopes", "ingest,read", tree=tree
        ).stdout.strip()
        services = Services(env, var, free_port(), None, tree=tree)
        services.start()
        services.wait_ready(token)

        post_batches(services.port, token, warm, args.pause, args.request_timeout, args.seconds)
        first = post_batches(
            services.port, token, alone, args.pause, args.request_timeout, args.seconds
        )
        flood = LogInFlood(
            services.port, args.logins, args.request_timeout, not args.ignore_retry_after
        )
        flood.start()
        try:
            time.sleep(args.ramp)
            with flood.lock:
                flood.counting = True
            second = post_batches(
                services.port, token, beside, args.pause, args.request_timeout, args.seconds
            )
            with flood.lock:
                flood.counting = False
        finally:
            flood.stop()
        services.check_alive()

        result.alone_p50_s, result.alone_p95_s = first.p50, first.p95
        result.beside_p50_s, result.beside_p95_s = second.p50, second.p95
        result.alone_statuses, result.beside_statuses = first.statuses, second.statuses
        result.ratio = second.p50 / first.p50 if first.p50 and second.p50 else None
        result.login_statuses = dict(sorted(flood.statuses.items()))
        result.logins = sum(flood.statuses.values())
        result.login_p50_s = statistics.median(flood.latencies) if flood.latencies else None
        if first.statuses != {"200": len(first.latencies)}:
            result.problems.append(f"ingest alone answered {first.statuses}")
        result.ok = not result.problems
        return result
    except Exception as exc:  # noqa: BLE001 - a failed run is reported, not fatal
        result.problems.append(f"{type(exc).__name__}: {exc}"[:500])
        return result
    finally:
        if services is not None:
            services.stop()
        store.drop()
        import redis

        redis.Redis.from_url(args.layer_url, socket_timeout=10).flushdb()
        if result.ok and not args.keep:
            shutil.rmtree(var, ignore_errors=True)


def statuses_text(statuses: dict) -> str:
    return ", ".join(f"{n} × {s}" for s, n in sorted(statuses.items())) or "-"


def tables(results: list[RunResult], codes: list[str]) -> str:
    def pick(code: str) -> list[RunResult]:
        return [r for r in results if r.code == code and r.ok]

    def med(code: str, name: str):
        return median([getattr(r, name) for r in pick(code)])

    def ms(value):
        return fmt(None if value is None else value * 1000, 0)

    def non_200(code: str) -> str:
        runs = pick(code)
        if not runs:
            return "-"
        bad = [sum(n for s, n in r.beside_statuses.items() if s != "200") for r in runs]
        total = [sum(r.beside_statuses.values()) for r in runs]
        return f"{statistics.median(bad):g} of {statistics.median(total):g}"

    heads = {"before": "before (baseline)", "after": "after (this code)"}
    lines = [
        "| ingest, one client (median of the correct runs) | "
        + " | ".join(heads[c] for c in codes)
        + " | goal |",
        "|---|" + "---:|" * len(codes) + "---|",
        "| p50 alone, ms | " + " | ".join(ms(med(c, "alone_p50_s")) for c in codes) + " | |",
        "| p50 beside the log-ins, ms | "
        + " | ".join(ms(med(c, "beside_p50_s")) for c in codes)
        + " | |",
        "| **beside / alone (p50; each run's ratio, median)** | "
        + " | ".join(
            f"**{fmt(med(c, 'ratio'), 2)}**" if med(c, "ratio") is not None else "-" for c in codes
        )
        + f" | ≤ {GOAL_RATIO:.2f} |",
        "| p95 alone, ms | " + " | ".join(ms(med(c, "alone_p95_s")) for c in codes) + " | |",
        "| p95 beside the log-ins, ms | "
        + " | ".join(ms(med(c, "beside_p95_s")) for c in codes)
        + " | |",
        "| ingest answers beside the log-ins other than 200 (of those sent) | "
        + " | ".join(non_200(c) for c in codes)
        + " | 0 |",
        "| log-in answers while ingest was timed | "
        + " | ".join(fmt(med(c, "logins")) for c in codes)
        + " | |",
        "| log-in answer p50, ms | "
        + " | ".join(ms(med(c, "login_p50_s")) for c in codes)
        + " | |",
        "| correct runs | "
        + " | ".join(f"{len(pick(c))} of {sum(r.code == c for r in results)}" for c in codes)
        + " | |",
        "",
        "Each run:",
        "",
        "| code | run | ok | p50 alone / beside, ms | ratio | p95 alone / beside, ms "
        "| ingest answers beside | log-in answers | load before | problems |",
        "|---|---:|---|---:|---:|---:|---|---|---:|---|",
    ]
    for r in results:
        cells = [
            r.code,
            str(r.run),
            "yes" if r.ok else "NO",
            f"{ms(r.alone_p50_s)} / {ms(r.beside_p50_s)}",
            fmt(r.ratio, 2),
            f"{ms(r.alone_p95_s)} / {ms(r.beside_p95_s)}",
            statuses_text(r.beside_statuses),
            statuses_text(r.login_statuses),
            fmt(r.load_before, 2),
            "; ".join(r.problems),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--batches", type=int, default=100, help="timed batches per phase")
    parser.add_argument("--warmup", type=int, default=10, help="batches before the timing")
    parser.add_argument("--batch", type=int, default=20, help="events per POST")
    parser.add_argument("--pause", type=float, default=0.05, help="seconds between batches")
    parser.add_argument("--logins", type=int, default=40, help="concurrent log-in clients")
    parser.add_argument("--ramp", type=float, default=2.0, help="log-ins alone first, s")
    parser.add_argument(
        "--seconds", type=float, default=60, help="at most this long per phase (fewer batches)"
    )
    parser.add_argument(
        "--ignore-retry-after",
        action="store_true",
        help="the log-in clients send again at once when refused (an HTTP flood)",
    )
    parser.add_argument(
        "--password-checks", type=int, help="SUPERVISOR_PASSWORD_CHECKS (default: the code's)"
    )
    parser.add_argument("--sweep-interval", type=float, default=5.0)
    parser.add_argument("--request-timeout", type=float, default=60)
    parser.add_argument(
        "--pg-url", default="postgres://postgres@127.0.0.1:5432/supervisor_bench_login"
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/12", help="the broker")
    parser.add_argument(
        "--layer-url", default="redis://127.0.0.1:6379/13", help="the channel layer and cache"
    )
    parser.add_argument("--baseline", metavar="REV", help="also measure this commit (before)")
    parser.add_argument("--keep", action="store_true", help="keep each run's var dir")
    parser.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks.md")
    parser.add_argument("--json", metavar="FILE", help="also write every run's figures here")
    args = parser.parse_args(argv)
    require_services(args.pg_url, args.redis_url)

    about = machine(["postgres"], args)
    started = datetime.now(UTC)
    trees = {"after": checkout(None, untracked=True)}
    if args.baseline:
        trees = {"before": checkout(args.baseline), **trees}
    needed = (args.warmup + 2 * args.batches) * args.batch
    history = generate(needed // 15 + 10, seed=0)
    events = history.events[:needed]
    if len(events) < needed:
        raise SystemExit(f"the history has {len(events)} events, {needed} needed")
    bodies = [
        json.dumps({"events": events[i : i + args.batch]}).encode()
        for i in range(0, needed, args.batch)
    ]

    results: list[RunResult] = []
    for number in range(1, args.runs + 1):
        for code, (tree, _) in trees.items():  # interleaved: slow spells hit both
            t = time.perf_counter()
            r = one_run(args, code, number, tree, bodies)
            results.append(r)
            print(
                f"{code} run {number}: {'ok' if r.ok else 'FAILED'} in "
                f"{time.perf_counter() - t:.0f} s; ingest p50 alone {fmt(r.alone_p50_s, 3)} s, "
                f"beside {fmt(r.beside_p50_s, 3)} s (ratio {fmt(r.ratio, 2)}), answers beside "
                f"{r.beside_statuses}; log-ins {r.login_statuses}; load before {r.load_before}"
                + (f"; problems: {r.problems}; files in {r.var}" if r.problems else ""),
                flush=True,
            )

    codes = list(trees)
    command = (
        f"python bench/login_flood.py --runs {args.runs}"
        + (f" --baseline {args.baseline}" if args.baseline else "")
        + (f" --batches {args.batches}" if args.batches != 100 else "")
        + (f" --logins {args.logins}" if args.logins != 40 else "")
        + (" --ignore-retry-after" if args.ignore_retry_after else "")
    )
    text = "\n".join(
        [
            f"Measured {started:%Y-%m-%d %H:%M} UTC on {about}.",
            "",
            "Code: "
            + "; ".join(f"{code}: {about_tree}" for code, (_, about_tree) in trees.items())
            + ".",
            "",
            f"Reproduce: `{command}` (PostgreSQL and Redis; {args.batches} timed batches of "
            f"{args.batch} events per phase, {args.pause:g} s apart, from one keep-alive "
            f"client, for at most {args.seconds:g} s a phase; {args.logins} log-in clients "
            "sending wrong passwords back to back, "
            + (
                "sending again at once when refused"
                if args.ignore_retry_after
                else "waiting out `Retry-After` when refused"
            )
            + ", the failed-log-in limits off; the web server, a worker of concurrency 2 and "
            "beat; a fresh database per run).",
            "",
            tables(results, codes),
        ]
    )
    print()
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    if not args.no_docs:
        launch.write_block(BEGIN, END, text, HEADING)
        print(f"\nwrote {launch.DOCS.relative_to(ROOT)}")
    for tree, _ in trees.values():
        if tree != ROOT:
            shutil.rmtree(tree, ignore_errors=True)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
