"""Ingest against a raw COPY: events/s through `POST /api/v1/events` beside PostgreSQL's
own bulk-load speed for the very same events, with the processes' peak memory.

Each run, on a fresh PostgreSQL database with Redis as the broker:

1. migrate, create a source, and COPY the history's events (psycopg 3 `cursor.copy`)
   into a bare table holding the columns ingest stores for an event
   (`bare_events (source, event_id, type, at, env, data jsonb)`), timed from the first
   row written to the commit: the database server's ceiling for these rows;
2. start the web server (daphne), a Celery worker (concurrency 2) and beat as
   `make run` (`manage.py up`) starts them, and post the same events in batches of 500
   (sorted by time, then cut) from 4 concurrent keep-alive clients: events/s = events /
   (first POST sent .. last response received), while sampling the peak resident set
   (VmHWM from /proc) of the web server and of the worker (its main process and each pool
   process), and the CPU each process used;
3. check every event was taken (accepted, no error, the raw event table holds them all),
   stop everything and check no process is left.

Each run's ingest / COPY ratio comes from that run; the tables give medians of the correct
runs. `--growth` adds runs that ingest three histories (10%, 30% and 100% of `--tasks`,
each with its own seed and ids) one after the other into the same database, waiting
until nothing awaits evaluation before each: events/s at each step shows whether
ingest slows as data accumulates.

    python bench/ingest_copy.py --tasks 200 --runs 1 --no-docs      # try it
    python bench/ingest_copy.py --runs 3 --baseline HEAD --growth    # the figures

`--snapshot REV` measures a clean `git archive` of a commit instead of the working tree;
`--baseline REV` measures REV as well ("before", interleaved run by run with the code
under test, "after"). Results go to stdout, `--json FILE`, and, unless `--no-docs`, into
docs/benchmarks.md between `<!-- ingest_copy:begin -->` and `<!-- ingest_copy:end -->`.
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
from history import generate  # noqa: E402
from launch import (  # noqa: E402
    ROOT,
    PeakRss,
    PostgresStore,
    Services,
    checkout,
    cpu_delta,
    cpu_snapshot,
    fmt,
    free_port,
    ingest,
    leftovers,
    machine,
    manage,
    median,
    ratio,
    relabel,
    require_services,
)

BEGIN, END = "<!-- ingest_copy:begin -->", "<!-- ingest_copy:end -->"
HEADING = "## Ingest against a raw COPY (bench/ingest_copy.py)"
GOAL_EVENTS_PER_S = 10_000
GOAL_RATIO = 0.1
GOAL_RSS_MB = 300
GROWTH = (0.1, 0.3, 1.0)


@dataclass
class Step:
    """One history posted in a run: how many events, onto how many already stored."""

    events: int
    stored_before: int
    seconds: float | None = None
    events_per_s: float | None = None
    batch_p50_s: float | None = None
    batch_p95_s: float | None = None
    waited_s: float | None = None  # until nothing awaited evaluation, before posting


@dataclass
class RunResult:
    code: str  # "before" (--baseline) or "after" (the code under test)
    kind: str  # "main" or "growth"
    run: int
    ok: bool = False
    problems: list[str] = field(default_factory=list)
    events: int = 0
    events_per_s: float | None = None
    ingest_s: float | None = None
    batch_p50_s: float | None = None
    batch_p95_s: float | None = None
    retries: int = 0
    copy_s: float | None = None
    copy_events_per_s: float | None = None
    ingest_over_copy: float | None = None
    rss: dict = field(default_factory=dict)
    web_rss_mb: float | None = None
    worker_main_rss_mb: float | None = None
    worker_pool_max_rss_mb: float | None = None
    worker_sum_rss_mb: float | None = None
    cpu_ingest: dict = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    load_before: float | None = None
    var: str = ""


def copy_bare(store: PostgresStore, rows: list[tuple]) -> float:
    """COPY `rows` into a new bare table; seconds from the first row to the commit."""
    import psycopg

    with psycopg.connect(store.url, connect_timeout=10) as conn:
        conn.execute(
            "CREATE TABLE bare_events (source int, event_id text, type text, at timestamptz, "
            "env text, data jsonb)"
        )
        conn.commit()
        with conn.cursor() as cur:
            start = time.perf_counter()
            with cur.copy(
                "COPY bare_events (source, event_id, type, at, env, data) FROM STDIN"
            ) as c:
                for row in rows:
                    c.write_row(row)
            conn.commit()
            seconds = time.perf_counter() - start
        stored = conn.execute("SELECT count(*) FROM bare_events").fetchone()[0]
    if stored != len(rows):
        raise RuntimeError(f"COPY stored {stored} rows of {len(rows)}")
    return seconds


def bare_rows(events: list[dict], source_id: int) -> list[tuple]:
    return [
        (
            source_id,
            e["id"],
            e["type"],
            e["at"],
            e.get("env", "default"),
            json.dumps(e.get("data", {}), ensure_ascii=False),
        )
        for e in events
    ]


def post(args, services, token, posting) -> tuple[Step, list[str], int]:
    bodies, sizes = posting
    done = ingest(
        services.port,
        token,
        bodies,
        sizes,
        args.clients,
        args.ingest_timeout,
        args.request_timeout,
    )
    step = Step(events=done.events, stored_before=0)
    if not done.errors:
        step.seconds = done.seconds
        step.events_per_s = done.events / done.seconds
        lat = sorted(done.latencies)
        step.batch_p50_s = statistics.median(lat)
        step.batch_p95_s = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
    return step, done.errors[:5], done.retries


WARM_UP = [
    {
        "id": "bench-warm-up",
        "type": "thread.seen",
        "at": "2026-01-01T00:00:00.000Z",
        "data": {"thread": "thread:bench-warm-up", "title": "Warm-up"},
    }
]


def warm_up(args, services: Services, token: str) -> None:
    """One small POST before timing: the web server's first request loads what it needs."""
    body = json.dumps({"events": WARM_UP}).encode()
    step, errors, _ = post(args, services, token, ([body], [len(WARM_UP)]))
    if errors:
        raise RuntimeError(f"warm-up POST: {errors[0]}")


def wait_caught_up(store: PostgresStore, services: Services, timeout: float) -> float | None:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        services.check_alive()
        if store.backlog() == 0:
            return time.perf_counter() - start
        time.sleep(0.5)
    return None


def one_run(args, code: str, tree: Path, kind: str, number: int, postings, copy_events):
    var = Path(tempfile.mkdtemp(prefix=f"supervisor-bench-copy-{code}-"))
    result = RunResult(code, kind, number, var=str(var))
    store = PostgresStore(args, var)
    env = store.env()
    services = None
    result.load_before = os.getloadavg()[0]
    try:
        store.create()
        manage(env, "migrate", "--noinput", "-v", "0", tree=tree)
        token = manage(env, "create_source", "bench", "--scopes", "ingest,read", tree=tree)
        token = token.stdout.strip()
        (source_id,) = store.query("SELECT id FROM core_source WHERE name = 'bench'")[0]
        if kind == "main":
            result.copy_s = copy_bare(store, bare_rows(copy_events, source_id))
            result.copy_events_per_s = len(copy_events) / result.copy_s
        services = Services(env, var, free_port(), None, tree=tree)
        services.start()
        services.wait_ready(token)
        warm_up(args, services, token)
        stored = 0
        with PeakRss(services) as rss:
            for posting in postings:
                waited = None
                if stored:
                    waited = wait_caught_up(store, services, args.catch_up_timeout)
                    if waited is None:
                        result.problems.append(
                            f"still evaluating {args.catch_up_timeout:g} s after the last step"
                        )
                cpu0 = cpu_snapshot(services, store)
                step, errors, retries = post(args, services, token, posting)
                cpu1 = cpu_snapshot(services, store)
                step.stored_before, step.waited_s = stored, waited
                result.steps.append(step)
                result.retries += retries
                if kind == "main":
                    result.cpu_ingest = cpu_delta(cpu0, cpu1)
                if errors:
                    result.problems += errors
                    return result
                stored += step.events
        result.rss = rss.summary()
        web, worker = result.rss.get("web", {}), result.rss.get("worker", {})
        result.web_rss_mb = max(web.get("main_mb") or 0, web.get("child_max_mb") or 0)
        result.worker_main_rss_mb = worker.get("main_mb")
        result.worker_pool_max_rss_mb = worker.get("child_max_mb")
        result.worker_sum_rss_mb = worker.get("sum_mb")
        last = result.steps[-1]
        result.events = sum(s.events for s in result.steps)
        result.events_per_s, result.ingest_s = last.events_per_s, last.seconds
        result.batch_p50_s, result.batch_p95_s = last.batch_p50_s, last.batch_p95_s
        if result.copy_events_per_s and result.events_per_s:
            result.ingest_over_copy = result.events_per_s / result.copy_events_per_s
        (kept,) = store.query("SELECT count(*) FROM core_ingestedevent")[0]
        kept -= len(WARM_UP)
        if kept != result.events:
            result.problems.append(f"{kept} events stored of {result.events} posted")
        services.check_alive()
        services.stop()
        result.problems += leftovers(services)
        result.ok = not result.problems
        return result
    except Exception as exc:  # noqa: BLE001 - a failed run is reported, not fatal
        result.problems.append(f"{type(exc).__name__}: {exc}")
        return result
    finally:
        if services is not None:
            services.stop()
            if result.ok:
                result.problems += leftovers(services)
                result.ok = not result.problems
        store.close()
        try:
            store.drop()
        except Exception as exc:  # noqa: BLE001
            result.problems.append(f"drop: {exc}")
        if result.ok and not args.keep:
            shutil.rmtree(var, ignore_errors=True)


# --- output ----------------------------------------------------------------------------


def med(results, key, code, kind="main"):
    return median([getattr(r, key) for r in results if r.ok and r.code == code and r.kind == kind])


def tables(results: list[RunResult], codes: list[str], summary: dict) -> str:
    two = len(codes) == 2
    head = "| figure (median of the correct runs) | " + " | ".join(codes)
    head += " | after / before" if two else ""
    head += " | goal | figure / goal |"
    sep = "|---|" + "---:|" * len(codes) + ("---:|" if two else "") + "---:|---:|"

    def row(label, key, digits=1, goal=None, goal_text=""):
        values = [med(results, key, c) for c in codes]
        cells = [label, *(fmt(v, digits) for v in values)]
        if two:
            cells.append(ratio(values[1], values[0]))
        cells.append(goal_text)
        if goal is None or values[-1] is None:
            cells.append("")
        else:
            cells.append(ratio(values[-1], goal))
        return "| " + " | ".join(cells) + " |"

    def pair(code):
        a, b = med(results, "batch_p50_s", code), med(results, "batch_p95_s", code)
        return f"{fmt(a, 2)} / {fmt(b, 2)}"

    def cpu(code, name):
        return median(
            [
                r.cpu_ingest.get(name)
                for r in results
                if r.ok and r.code == code and r.kind == "main" and r.cpu_ingest
            ]
        )

    def count(code, kind):
        runs = [r for r in results if r.code == code and r.kind == kind]
        return f"{sum(r.ok for r in runs)} of {len(runs)}"

    lines = [
        f"History: {summary['tasks']:,} tasks, {summary['events']:,} events, "
        f"{summary['parent_threads']} parent threads (seed {summary['seed']}).",
        "",
        head,
        sep,
        row(
            "ingest through the API, events/s (higher is better)",
            "events_per_s",
            0,
            GOAL_EVENTS_PER_S,
            f"≥ {GOAL_EVENTS_PER_S:,}",
        ),
        row("raw `COPY` of the same events into a bare table, events/s", "copy_events_per_s", 0),
        row(
            "ingest / COPY (each run's own ratio)",
            "ingest_over_copy",
            3,
            GOAL_RATIO,
            f"≥ {GOAL_RATIO:g}",
        ),
        row("ingest wall time, s", "ingest_s"),
        row("COPY wall time (first row to commit), s", "copy_s", 2),
        "| batch of 500 round trip, p50 / p95 s | "
        + " | ".join(pair(c) for c in codes)
        + (" | " if two else "")
        + " | | |",
        row(
            "peak RSS, web server, MB",
            "web_rss_mb",
            0,
            GOAL_RSS_MB,
            f"< {GOAL_RSS_MB}",
        ),
        row(
            "peak RSS, worker main process, MB",
            "worker_main_rss_mb",
            0,
            GOAL_RSS_MB,
            f"< {GOAL_RSS_MB}",
        ),
        row(
            "peak RSS, largest worker pool process, MB",
            "worker_pool_max_rss_mb",
            0,
            GOAL_RSS_MB,
            f"< {GOAL_RSS_MB}",
        ),
        row("peak RSS, worker main + pool processes summed, MB", "worker_sum_rss_mb", 0),
    ]
    for name, label in (
        ("web", "web server"),
        ("worker", "worker (main + pool)"),
        ("beat", "beat"),
        ("db", "PostgreSQL backends"),
        ("client", "benchmark client"),
        ("others", "other processes on the machine (noise)"),
    ):
        values = [cpu(c, name) for c in codes]
        cells = [f"CPU s during ingest: {label}", *(fmt(v) for v in values)]
        cells += [ratio(values[1], values[0])] if two else []
        lines.append("| " + " | ".join(cells) + " | | |")
    lines.append(
        "| correct runs | "
        + " | ".join(count(c, "main") for c in codes)
        + (" | " if two else "")
        + " | | |"
    )
    if any(r.kind == "growth" for r in results):
        lines += [
            "",
            "Growth: three histories (10%, 30% and 100% of the size, each with its own seed and "
            "ids) posted one after the other into the same database, waiting before each step "
            "until nothing awaits evaluation; events/s of each step (median of the correct "
            "runs), and the main runs' figure into an empty database for comparison:",
            "",
            "| events already stored | events posted | "
            + " | ".join(f"{c} events/s" for c in codes)
            + (" | after / before" if two else "")
            + " |",
            "|---:|---:|" + "---:|" * len(codes) + ("---:|" if two else ""),
        ]
        sizes = sorted(
            {(s.stored_before, s.events) for r in results if r.kind == "growth" for s in r.steps}
        )
        for i, (stored, events) in enumerate(sizes):
            values = [
                median(
                    [
                        r.steps[i].events_per_s
                        for r in results
                        if r.ok and r.kind == "growth" and r.code == c and len(r.steps) > i
                    ]
                )
                for c in codes
            ]
            cells = [f"{stored:,}", f"{events:,}", *(fmt(v, 0) for v in values)]
            cells += [ratio(values[1], values[0])] if two else []
            lines.append("| " + " | ".join(cells) + " |")
        values = [med(results, "events_per_s", c) for c in codes]
        cells = ["0 (main runs)", f"{summary['events']:,}", *(fmt(v, 0) for v in values)]
        cells += [ratio(values[1], values[0])] if two else []
        lines.append("| " + " | ".join(cells) + " |")
        lines.append(
            "| correct growth runs | | "
            + " | ".join(count(c, "growth") for c in codes)
            + (" | " if two else "")
            + " |"
        )
    lines += [
        "",
        "Each run (RSS in MB: web / worker main / largest pool process):",
        "",
        "| code | kind | run | ok | events/s | COPY events/s | ingest / COPY | ingest s "
        "| p50 / p95 batch s | RSS MB | steps: events/s | load before | others' CPU s "
        "| problems |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in results:
        steps = " / ".join(fmt(s.events_per_s, 0) for s in r.steps) if r.kind == "growth" else ""
        cells = [
            r.code,
            r.kind,
            str(r.run),
            "yes" if r.ok else "NO",
            fmt(r.events_per_s, 0),
            fmt(r.copy_events_per_s, 0),
            fmt(r.ingest_over_copy, 3),
            fmt(r.ingest_s),
            f"{fmt(r.batch_p50_s, 2)} / {fmt(r.batch_p95_s, 2)}",
            f"{fmt(r.web_rss_mb, 0)} / {fmt(r.worker_main_rss_mb, 0)} / "
            f"{fmt(r.worker_pool_max_rss_mb, 0)}",
            steps,
            fmt(r.load_before, 2),
            fmt(r.cpu_ingest.get("others")) if r.cpu_ingest else "-",
            "; ".join(r.problems).replace("|", "/"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def postings_of(events: list[dict], batch: int) -> tuple[list[bytes], list[int]]:
    chunks = [events[i : i + batch] for i in range(0, len(events), batch)]
    bodies = [json.dumps({"events": c}, ensure_ascii=False).encode() for c in chunks]
    return bodies, [len(c) for c in chunks]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=5000, help="history size (5000: ~100k events)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=500, help="events per POST")
    parser.add_argument("--clients", type=int, default=4, help="concurrent keep-alive clients")
    parser.add_argument(
        "--sweep-interval",
        type=float,
        default=5.0,
        help="beat's sweep interval, s (5: `make run`'s default)",
    )
    parser.add_argument(
        "--pg-url", default="postgres://postgres@127.0.0.1:5432/supervisor_bench_copy"
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/11")
    parser.add_argument("--ingest-timeout", type=float, default=1800)
    parser.add_argument("--request-timeout", type=float, default=300)
    parser.add_argument(
        "--catch-up-timeout",
        type=float,
        default=300,
        help="--growth: longest wait for evaluation to catch up between steps",
    )
    parser.add_argument(
        "--growth",
        action="store_true",
        help="also ingest 10%%, 30%% and 100%% of the size one after the other into one database",
    )
    parser.add_argument(
        "--growth-only", action="store_true", help="only the --growth runs, not the main ones"
    )
    parser.add_argument(
        "--merge",
        metavar="FILE",
        help="add the runs of an earlier invocation (its --json FILE, same --tasks) to the "
        "tables, e.g. main runs and --growth-only runs taken one after the other",
    )
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
    args.growth = args.growth or args.growth_only

    require_services(args.pg_url, args.redis_url)
    PostgresStore(args, Path("."))  # refuses a database not named supervisor_bench*
    about = machine(["postgres"], args)
    trees: dict[str, tuple[Path, str]] = {}
    if args.baseline:
        trees["before"] = checkout(args.baseline, untracked=True)
    trees["after"] = checkout(args.snapshot, untracked=True)
    codes = list(trees)
    started = datetime.now(UTC)

    history = generate(args.tasks, seed=args.seed)
    summary = history.summary()
    print(json.dumps(summary), flush=True)
    main_posting = postings_of(history.events, args.batch)
    growth_postings = []
    if args.growth:
        for i, share in enumerate(GROWTH, 1):
            tasks = max(1, round(args.tasks * share))
            events = generate(tasks, seed=args.seed + 100 + i).events
            growth_postings.append(postings_of(relabel(events, f"g{i}"), args.batch))

    results: list[RunResult] = []
    command = f"python bench/ingest_copy.py --tasks {args.tasks} --runs {args.runs}"
    command += f" --baseline {args.baseline}" if args.baseline else ""
    command += f" --snapshot {args.snapshot}" if args.snapshot else ""
    command += " --growth-only" if args.growth_only else " --growth" if args.growth else ""
    earlier = []
    if args.merge:
        earlier = json.loads(Path(args.merge).read_text())
        earlier = earlier.get("merged", []) + [{k: v for k, v in earlier.items() if k != "merged"}]
        for invocation in earlier:
            for run in invocation["runs"]:
                steps = [Step(**step) for step in run.pop("steps")]
                results.append(RunResult(**run, steps=steps))
    invocation = {
        "command": command,
        "measured": f"{started:%Y-%m-%d %H:%M} UTC",
        "code": {c: trees[c][1] for c in codes},
    }

    def save_json():
        if args.json:
            data = {**invocation, "runs": [asdict(r) for r in new], "merged": earlier}
            Path(args.json).write_text(json.dumps(data, indent=1))

    new: list[RunResult] = []
    for number in range(1, args.runs + 1):
        plan = ([] if args.growth_only else [(c, "main") for c in codes]) + (
            [(c, "growth") for c in codes] if args.growth else []
        )
        for code, kind in plan:
            t = time.perf_counter()
            postings = [main_posting] if kind == "main" else growth_postings
            r = one_run(args, code, trees[code][0], kind, number, postings, history.events)
            results.append(r)
            new.append(r)
            save_json()
            print(
                f"{code} {kind} run {number}: {'ok' if r.ok else 'FAILED'} in "
                f"{time.perf_counter() - t:.0f} s; ingest {fmt(r.events_per_s, 0)} events/s, "
                f"COPY {fmt(r.copy_events_per_s, 0)} events/s, ratio {fmt(r.ingest_over_copy, 3)}"
                f"; steps {[fmt(s.events_per_s, 0) for s in r.steps]}; rss {r.rss}; "
                f"cpu {r.cpu_ingest}; load before {r.load_before}"
                + (f"; problems: {r.problems}; files in {r.var}" if r.problems else ""),
                flush=True,
            )

    code_lines = [f"- {c}: {trees[c][1]}" for c in codes]
    also = [
        f"With the runs of `{e['command']}`, measured {e['measured']} on the same code"
        + ("" if e["code"] == invocation["code"] else f" ({e['code']})")
        + "."
        for e in earlier
    ]
    text = "\n".join(
        [
            f"Measured {started:%Y-%m-%d %H:%M} UTC on {about}.",
            "",
            "Code:" if len(codes) > 1 else f"Code: {trees['after'][1]}.",
            *(code_lines if len(codes) > 1 else []),
            "",
            f"Reproduce: `{command}` (PostgreSQL with Redis as the broker; {args.batch} events "
            f"per POST from {args.clients} keep-alive clients; web server, worker "
            f"(concurrency 2) and beat as `make run` starts them, sweep every "
            f"{args.sweep_interval:g} s; the COPY runs alone on the fresh database before "
            "the services start).",
            *(["", *also] if also else []),
            "",
            tables(results, codes, summary),
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
    return 0 if all(r.ok for r in new) else 1


if __name__ == "__main__":
    sys.exit(main())
