"""Ingest and detection benchmark: a seed-000-shaped history through the HTTP API.

For each backend (embedded SQLite with the filesystem broker; PostgreSQL with Redis as
the broker) and each run, on a fresh store: migrate, create a source, start the web
server (daphne), one Celery worker (concurrency 2) and beat (sweep every second) as
`manage.py up` does, then

- post the events of `bench/history.py` in batches of 500 (sorted by time, then cut)
  from 4 concurrent keep-alive clients: events/s = events / (first POST sent .. last
  response received);
- poll the flag table until the open flags equal the history's expected set: "time
  until the last flag is open", counted from the last POST's response;
- stop the services and time `manage.py report --json` on that store.

A run whose open flags (or whose report) differ from what the history expects is a
failure, reported with its difference and left out of the medians.

    python bench/ingest_detect.py --tasks 200 --runs 1 --backend sqlite     # try it
    python bench/ingest_detect.py --tasks 5000 --runs 3 --backend both      # the figures

`--snapshot HEAD` runs a clean `git archive` of a commit instead of the working tree
(which other engineers may be editing); the figures name the code they measured.
Diagnostics (not written to the docs): `--ingest-only` (web server alone, no
evaluation), `--drain` (how long the worker stays busy after the burst), `--py-spy PATH`
(collapsed stacks of the web server and the worker, kept in the run's directory).

Results go to stdout and, unless --no-docs, into docs/benchmarks.md (between markers;
the rest of that file is left alone). Runs are interleaved (sqlite 1, postgres 1,
sqlite 2, ...) so that a busy spell on the machine hits both backends.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import launch  # noqa: E402  (re-executes under .venv first)
from history import History, generate  # noqa: E402
from launch import (  # noqa: E402, F401  (re-exported: other scripts import them from here)
    CLK_TCK,
    DOCS,
    ROOT,
    VENV_PY,
    Ingest,
    PostgresStore,
    Services,
    SqliteStore,
    Store,
    api_open_flags,
    busy_cpu,
    code_revision,
    cpu_delta,
    cpu_snapshot,
    fmt,
    free_port,
    get,
    git,
    group_cpu,
    ingest,
    machine,
    manage,
    median,
    pid_cpu,
    ratio,
)

BEGIN, END = "<!-- ingest_detect:begin -->", "<!-- ingest_detect:end -->"
GOAL_PG_EVENTS_PER_S = 5000
GOAL_REPORT_S = 10.0


# --- one run ---------------------------------------------------------------------------


@dataclass
class RunResult:
    backend: str
    run: int
    ok: bool = False
    problems: list[str] = field(default_factory=list)
    events: int = 0
    batches: int = 0
    ingest_s: float | None = None
    events_per_s: float | None = None
    batch_p50_s: float | None = None
    batch_p95_s: float | None = None
    retries: int = 0
    backlog_at_last_post: int | None = None
    flags_at_last_post: int | None = None
    detect_s: float | None = None
    caught_up_s: float | None = None  # until no subject awaits evaluation
    flag_rows: int | None = None  # flag openings kept, transient ones included
    flags_by_kind: dict = field(default_factory=dict)
    queued_at_caught_up: int | None = None  # Celery jobs still waiting when caught up
    drained_s: float | None = None  # with --drain: until the broker's queue is empty
    load_before: float | None = None  # 1-minute load average when the run started
    report_s: float | None = None
    startup_s: float | None = None  # `manage.py shell -c pass`: Django's start alone
    migrate_s: float | None = None
    cpu_ingest: dict = field(default_factory=dict)
    cpu_detect: dict = field(default_factory=dict)
    report_counts: dict = field(default_factory=dict)
    var: str = ""


def describe(diff_missing, diff_extra) -> list[str]:
    out = []
    for label, items in (("missing", diff_missing), ("unexpected", diff_extra)):
        if items:
            sample = ", ".join(f"{t}:{i} {k}" for t, i, k in sorted(items)[:8])
            out.append(
                f"{len(items)} {label} open flag(s): {sample}{' ...' if len(items) > 8 else ''}"
            )
    return out


def one_run(args, backend: str, number: int, history: History, bodies, sizes) -> RunResult:
    var = Path(tempfile.mkdtemp(prefix=f"supervisor-bench-{backend}-"))
    result = RunResult(backend, number, var=str(var))
    store = (SqliteStore if backend == "sqlite" else PostgresStore)(args, var)
    env = store.env()
    expected = {("task", task, kind) for task, kind in history.expected}
    services = None
    result.load_before = os.getloadavg()[0]
    try:
        store.create()
        t = time.perf_counter()
        manage(env, "migrate", "--noinput", "-v", "0")
        result.migrate_s = time.perf_counter() - t
        token = manage(env, "create_source", "bench", "--scopes", "ingest,read").stdout.strip()
        services = Services(env, var, free_port(), args.py_spy)
        services.start(only=("web",) if args.ingest_only else None)
        services.wait_ready(token)
        services.spy()

        # Ingest.
        cpu0 = cpu_snapshot(services, store)
        done = ingest(
            services.port,
            token,
            bodies,
            sizes,
            args.clients,
            args.ingest_timeout,
            args.request_timeout,
        )
        last_post = time.perf_counter()
        cpu1 = cpu_snapshot(services, store)
        result.cpu_ingest = cpu_delta(cpu0, cpu1)
        result.events, result.batches, result.retries = done.events, done.batches, done.retries
        if done.errors:
            result.problems += done.errors[:5]
            return result
        result.ingest_s = done.seconds
        result.events_per_s = done.events / done.seconds
        lat = sorted(done.latencies)
        result.batch_p50_s = statistics.median(lat)
        result.batch_p95_s = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
        result.backlog_at_last_post = store.backlog()
        result.flags_at_last_post = len(store.open_flags())
        if args.ingest_only:  # a diagnostic: ingest without evaluation competing with it
            result.ok = True
            return result

        # Detection: until the open flags are the expected ones.
        deadline = last_post + args.detect_timeout
        found: set = set()
        while time.perf_counter() < deadline:
            services.check_alive()
            found = store.open_flags()
            if found == expected:
                result.detect_s = time.perf_counter() - last_post
                break
            time.sleep(args.poll)
        # Then until nothing awaits evaluation, and check that nothing changed meanwhile.
        while time.perf_counter() < deadline:
            if store.backlog() == 0:
                result.caught_up_s = time.perf_counter() - last_post
                result.queued_at_caught_up = store.queued_jobs()
                break
            time.sleep(args.poll)
        if args.drain and result.caught_up_s is not None:
            # A diagnostic: how long the worker goes on with jobs queued during the burst.
            while time.perf_counter() < deadline:
                services.check_alive()
                if store.queued_jobs() == 0:
                    result.drained_s = time.perf_counter() - last_post
                    break
                time.sleep(1)
        time.sleep(3 * args.sweep_interval + 1)  # a few more sweeps
        cpu2 = cpu_snapshot(services, store)
        result.cpu_detect = cpu_delta(cpu1, cpu2)
        final = store.open_flags()
        through_api = api_open_flags(services.port, token)
        result.flags_by_kind = store.flag_rows()
        result.flag_rows = sum(result.flags_by_kind.values())
        if result.detect_s is None:
            result.problems.append(f"open flags not as expected after {args.detect_timeout} s")
        if result.caught_up_s is None:
            result.problems.append(f"evaluation backlog not empty after {args.detect_timeout} s")
        if final != expected:
            result.problems += describe(expected - final, final - expected)
        if through_api != final:
            result.problems.append("GET /api/v1/flags?state=open disagrees with the flag table")
        services.stop()
        store.close()

        # The report, on the store as left (services stopped: it alone runs).
        t = time.perf_counter()
        manage(env, "shell", "-c", "pass")
        result.startup_s = time.perf_counter() - t
        t = time.perf_counter()
        report = json.loads(manage(env, "report", "--json", timeout=args.detect_timeout).stdout)
        result.report_s = time.perf_counter() - t
        stale = {task for task, shape in history.shapes.items() if shape == "stale"}
        result.report_counts = {
            "tasks_seen": report["tasks_seen"],
            "gap_finalizations": report["gap_finalizations"]["count"],
            "handed_earlier_text": report["handed_earlier_text"]["count"],
            "undelivered_result_open": report["undelivered_result_open"]["count"],
        }
        if report["tasks_seen"] != len(history.shapes):
            result.problems.append(
                f"report: tasks_seen {report['tasks_seen']} != {len(history.shapes)}"
            )
        for key in ("gap_finalizations", "handed_earlier_text", "undelivered_result_open"):
            got = {ref["task"] for ref in report[key]["tasks"]}
            if got != stale:
                result.problems.append(
                    f"report: {key} has {len(got)} tasks, {len(got - stale)} not stale, "
                    f"{len(stale - got)} stale missing"
                )
        result.ok = not result.problems
        return result
    except Exception as exc:  # noqa: BLE001 - a failed run is reported, not fatal
        result.problems.append(f"{type(exc).__name__}: {exc}")
        return result
    finally:
        if services is not None:
            services.stop()
        store.close()
        try:
            store.drop()
        except Exception as exc:  # noqa: BLE001
            result.problems.append(f"drop: {exc}")
        if result.ok and not args.keep and not args.py_spy:
            shutil.rmtree(var, ignore_errors=True)


# --- output ----------------------------------------------------------------------------


def medians(results: list[RunResult]) -> dict:
    ok = [r for r in results if r.ok]
    keys = [
        "events_per_s",
        "ingest_s",
        "batch_p50_s",
        "batch_p95_s",
        "backlog_at_last_post",
        "detect_s",
        "caught_up_s",
        "report_s",
        "startup_s",
        "flag_rows",
        "queued_at_caught_up",
        "drained_s",
        "load_before",
    ]
    out = {k: median([getattr(r, k) for r in ok]) for k in keys}
    out["runs_ok"], out["runs"] = len(ok), len(results)
    for phase in ("cpu_ingest", "cpu_detect"):
        names = sorted({n for r in ok for n in getattr(r, phase)})
        out[phase] = {n: median([getattr(r, phase).get(n) for r in ok]) for n in names}
    return out


def tables(results: list[RunResult], history: History) -> str:
    by = {b: [r for r in results if r.backend == b] for b in ("sqlite", "postgres")}
    m = {b: medians(rs) for b, rs in by.items() if rs}
    s, p = m.get("sqlite", {}), m.get("postgres", {})

    def row(label, key, digits=1, goal="", versus=None, both=False):
        """| label | SQLite | PostgreSQL | PG / SQLite | goal | PG / goal |"""
        a, b = s.get(key), p.get(key)
        cells = [label, fmt(a, digits), fmt(b, digits), ratio(b, a) if both else "", goal]
        if versus is None:
            cells.append("")
        else:
            cells.append(f"{ratio(b, versus)} (SQLite {ratio(a, versus)})")
        return "| " + " | ".join(cells) + " |"

    def pair(key1, key2, digits=2):
        return [f"{fmt(d.get(key1), digits)} / {fmt(d.get(key2), digits)}" for d in (s, p)]

    p50 = pair("batch_p50_s", "batch_p95_s")
    runs_ok = [f"{d.get('runs_ok') or 0} of {d.get('runs') or 0}" for d in (s, p)]
    expected = len(history.expected)
    lines = [
        f"History: {len(history.shapes):,} tasks, {len(history.events):,} events, "
        f"{len(history.parents)} parent threads, {expected} flags expected open "
        f"(seed {history.seed}).",
        "",
        "| figure (median of the correct runs) | SQLite | PostgreSQL | PG / SQLite | goal "
        "| figure / goal |",
        "|---|---:|---:|---:|---:|---:|",
        row(
            "ingest, events/s (higher is better)",
            "events_per_s",
            0,
            f"{GOAL_PG_EVENTS_PER_S:,} on PG",
            GOAL_PG_EVENTS_PER_S,
            both=True,
        ),
        row("ingest wall time, s", "ingest_s", both=True),
        f"| batch of 500 round trip, p50 / p95 s | {p50[0]} | {p50[1]} "
        f"| {ratio(p.get('batch_p50_s'), s.get('batch_p50_s'))} | | |",
        row("subjects awaiting evaluation at the last POST", "backlog_at_last_post"),
        row(
            "time until the last flag is open, s (from the last POST's response)",
            "detect_s",
            both=True,
        ),
        row("time until nothing awaits evaluation, s", "caught_up_s", both=True),
        row(
            "`manage.py report --json`, s",
            "report_s",
            2,
            f"< {GOAL_REPORT_S:.0f}",
            GOAL_REPORT_S,
            both=True,
        ),
        row("of which Django's start (`manage.py shell -c pass`), s", "startup_s", 2),
        row("Celery jobs still queued when caught up", "queued_at_caught_up"),
        *(
            [row("time until the broker's queue is empty, s (--drain)", "drained_s")]
            if any(r.drained_s is not None for r in results)
            else []
        ),
        row(
            f"flag rows kept (openings, transient ones included; {expected} expected open)",
            "flag_rows",
        ),
        f"| correct runs | {runs_ok[0]} | {runs_ok[1]} | | | |",
        "",
        "CPU seconds by process (median), ingest phase / detection phase (from the last POST "
        "until nothing awaits evaluation, plus a few sweeps):",
        "",
        "| process | SQLite ingest | SQLite detect | PostgreSQL ingest | PostgreSQL detect |",
        "|---|---:|---:|---:|---:|",
    ]
    labels = {
        "db": "PostgreSQL backends",
        "client": "benchmark client (posting, polling)",
        "others": "other processes on the machine (noise)",
    }
    for name in ("web", "worker", "beat", "db", "client", "others"):
        cells = [labels.get(name, name)]
        for d in (s, p):
            for phase in ("cpu_ingest", "cpu_detect"):
                cells.append(fmt((d.get(phase) or {}).get(name)) if d else "-")
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Each run:",
        "",
        "| backend | run | ok | events/s | ingest s | p50 / p95 batch s | backlog at last POST "
        "| last flag open s | caught up s | report s | load before | others' CPU s | problems |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        others = r.cpu_ingest.get("others", 0.0) + r.cpu_detect.get("others", 0.0)
        cells = [
            r.backend,
            str(r.run),
            "yes" if r.ok else "NO",
            fmt(r.events_per_s, 0),
            fmt(r.ingest_s),
            f"{fmt(r.batch_p50_s, 2)} / {fmt(r.batch_p95_s, 2)}",
            fmt(r.backlog_at_last_post),
            fmt(r.detect_s),
            fmt(r.caught_up_s),
            fmt(r.report_s, 2),
            fmt(r.load_before, 2),
            fmt(others),
            "; ".join(r.problems),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_docs(text: str) -> None:
    launch.write_block(
        BEGIN, END, text, "## Ingest and detection (bench/ingest_detect.py)", append_heading=False
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--tasks-per-parent", type=int, default=20, help="tasks per parent thread, on average"
    )
    parser.add_argument("--batch", type=int, default=500, help="events per POST")
    parser.add_argument("--clients", type=int, default=4, help="concurrent HTTP clients")
    parser.add_argument("--sweep-interval", type=float, default=1.0)
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/supervisor_bench")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--ingest-timeout", type=float, default=1800)
    parser.add_argument("--request-timeout", type=float, default=300)
    parser.add_argument("--detect-timeout", type=float, default=1200)
    parser.add_argument("--poll", type=float, default=0.2, help="seconds between flag polls")
    parser.add_argument("--py-spy", metavar="PATH", help="record web and worker with this py-spy")
    parser.add_argument(
        "--snapshot",
        metavar="REV",
        help="run a clean `git archive` of this "
        "commit (e.g. HEAD) instead of the working tree, which others may be editing",
    )
    parser.add_argument(
        "--ingest-only",
        action="store_true",
        help="diagnostic: start the web "
        "server alone (no worker, no beat) and measure ingest only; implies --no-docs",
    )
    parser.add_argument(
        "--drain",
        action="store_true",
        help="diagnostic: after catching up, also wait until the broker's queue is empty",
    )
    parser.add_argument("--keep", action="store_true", help="keep each run's var dir")
    parser.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks.md")
    parser.add_argument("--json", metavar="FILE", help="also write every run's figures here")
    args = parser.parse_args(argv)

    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    args.no_docs = args.no_docs or args.ingest_only
    about = machine(backends, args)
    revision = code_revision(args.snapshot)
    started = datetime.now(UTC)
    history = generate(args.tasks, seed=args.seed, tasks_per_parent=args.tasks_per_parent)
    print(json.dumps(history.summary()), flush=True)
    chunks = [history.events[i : i + args.batch] for i in range(0, len(history.events), args.batch)]
    bodies = [json.dumps({"events": c}, ensure_ascii=False).encode() for c in chunks]
    sizes = [len(c) for c in chunks]

    results: list[RunResult] = []
    for number in range(1, args.runs + 1):
        for backend in backends:  # interleaved, so that slow spells hit both backends
            t = time.perf_counter()
            r = one_run(args, backend, number, history, bodies, sizes)
            results.append(r)
            took = time.perf_counter() - t
            print(
                f"{backend} run {number}: {'ok' if r.ok else 'FAILED'} in {took:.0f} s; "
                f"{fmt(r.events_per_s, 0)} events/s, last flag open after {fmt(r.detect_s)} s, "
                f"caught up after {fmt(r.caught_up_s)} s, report {fmt(r.report_s, 2)} s; "
                f"cpu ingest {r.cpu_ingest} detect {r.cpu_detect}; jobs queued when caught up "
                f"{r.queued_at_caught_up}; load before {r.load_before}; flags {r.flags_by_kind}"
                + (f"; problems: {r.problems}; files in {r.var}" if r.problems else ""),
                flush=True,
            )

    command = (
        f"python bench/ingest_detect.py --tasks {args.tasks} --runs {args.runs} "
        f"--backend {args.backend}"
        + (f" --snapshot {args.snapshot}" if args.snapshot else "")
        + (f" --tasks-per-parent {args.tasks_per_parent}" if args.tasks_per_parent != 20 else "")
    )
    text = "\n".join(
        [
            f"Measured {started:%Y-%m-%d %H:%M} UTC on {about}.",
            "",
            f"Code: {revision}.",
            "",
            f"Reproduce: `{command}` (about {args.batch} events per POST from {args.clients} "
            f"clients; worker concurrency 2; sweep every {args.sweep_interval:g} s).",
            "",
            tables(results, history),
        ]
    )
    print()
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    if not args.no_docs:
        write_docs(text)
        print(f"\nwrote {DOCS.relative_to(ROOT)}")
    if args.snapshot and launch.TREE != ROOT and all(r.ok for r in results):
        shutil.rmtree(launch.TREE, ignore_errors=True)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
