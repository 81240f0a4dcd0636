"""Scale-out, measured: what a second web process and a second worker buy, and what one
namespace costs beside four, on PostgreSQL with Redis as the broker.

The same events go in every way: four histories of `--tasks / 4` tasks each (their own
seeds and ids). Each run, on a fresh database, posts them in batches of 500, one history
per lane of `--clients / 4` keep-alive clients, in one of four layouts:

- processes: ONE web server (daphne) and ONE Celery worker of concurrency 1, or TWO of
  each (the lanes alternate between the two web servers' ports), beat beside them;
- namespaces: the four histories into ONE source and namespace, or into FOUR sources in
  four namespaces.

Events/s = events / (first POST sent .. last response received). CPU is read from /proc
(web servers + workers + the PostgreSQL backends of the bench database, as
bench/launch.py reads it) from the first POST until evaluation has caught up (nothing
awaits evaluation and the broker's queue is empty), so the workers' share is counted
whole: CPU ms per 1,000 events. Two processes of each on the same namespace should cost
no more per event and post faster; a lock between them shows as a higher cost or a
lower rate.

    python bench/scale_out.py --tasks 500 --runs 2 --no-docs     # try it (~8 minutes)
    python bench/scale_out.py --tasks 2000 --runs 3              # the figures

Results go to stdout, `--json FILE`, and, unless `--no-docs`, into docs/benchmarks.md
between `<!-- scale_out:begin -->` and `<!-- scale_out:end -->`.
"""

from __future__ import annotations

import argparse
import json
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
from ingest_copy import WARM_UP, postings_of  # noqa: E402
from launch import (  # noqa: E402
    ROOT,
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

BEGIN, END = "<!-- scale_out:begin -->", "<!-- scale_out:end -->"
HEADING = "## Scale-out (bench/scale_out.py)"
PARTS = 4  # histories, lanes and, in the four-namespace layout, sources
LAYOUTS = [(1, 1), (2, 1), (1, 4), (2, 4)]  # (web and worker processes, namespaces)


class ScaledServices(Services):
    """`count` web servers and `count` workers of concurrency 1, and one beat."""

    def __init__(self, env, var, count: int, tree: Path):
        super().__init__(env, var, free_port(), None, tree=tree)
        self.count = count
        self.ports = [self.port] + [free_port() for _ in range(count - 1)]

    def commands(self):
        base = super().commands()
        worker = base["worker"]
        at = worker.index("--concurrency")
        worker = [*worker[: at + 1], "1", *worker[at + 2 :]]
        out = {}
        for i, port in enumerate(self.ports, 1):
            web = [*base["web"][:-3], "-p", str(port), base["web"][-1]]
            out[f"web{i}"] = web
            # Celery refuses no duplicate node name, but its log and control would mix.
            out[f"worker{i}"] = [*worker, "-n", f"bench{i}@%h"]
        out["beat"] = base["beat"]
        return out

    def wait_ready(self, token: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        waiting = set(self.procs)
        waiting.discard("beat")
        while waiting and time.monotonic() < deadline:
            self.check_alive()
            for name in sorted(waiting):
                if name.startswith("web"):
                    port = self.ports[int(name[3:]) - 1]
                    try:
                        status, _ = launch.get(port, token, "/api/v1/flags?limit=1", timeout=5)
                    except OSError:
                        continue
                    if status == 200:
                        waiting.discard(name)
                elif b" ready." in (self.var / f"{name}.log").read_bytes():
                    waiting.discard(name)
            time.sleep(0.2)
        if waiting:
            raise TimeoutError(f"not ready after {timeout} s: {sorted(waiting)}")


@dataclass
class RunResult:
    processes: int
    namespaces: int
    run: int
    ok: bool = False
    problems: list[str] = field(default_factory=list)
    events: int = 0
    ingest_s: float | None = None
    events_per_s: float | None = None
    caught_up_s: float | None = None  # after the last response
    cpu: dict = field(default_factory=dict)  # first POST .. caught up, by service
    cpu_ms_per_1000: float | None = None  # web + workers + PostgreSQL
    retries: int = 0
    unavailable: int = 0  # 503s (the API's answer to a deadlock) waited out and re-sent
    load_before: float | None = None
    var: str = ""

    @property
    def layout(self) -> tuple[int, int]:
        return self.processes, self.namespaces


def lanes_ingest(args, lanes) -> tuple[float, int, int, list[str]]:
    """Every lane (port, token, bodies, sizes) at once, each from its own clients:
    seconds from the start to the last lane's last response, retries, 503s waited out
    (a deadlock or a lock timeout shows as one), errors."""
    done = [None] * len(lanes)
    per_lane = max(1, args.clients // len(lanes))

    def lane(i, port, token, bodies, sizes):
        done[i] = ingest(
            port,
            token,
            bodies,
            sizes,
            per_lane,
            args.ingest_timeout,
            args.request_timeout,
            retry_unavailable=True,
        )

    threads = [threading.Thread(target=lane, args=(i, *x)) for i, x in enumerate(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # The lanes start within a thread start of each other: the slowest one's time is the
    # whole posting's.
    errors = [e for d in done if d for e in d.errors]
    if not all(done):
        errors.append("a lane did not report")
    seconds = max((d.seconds for d in done if d), default=0.0)
    reported = [d for d in done if d]
    return seconds, sum(d.retries for d in reported), sum(d.unavailable for d in reported), errors


def wait_caught_up(store: PostgresStore, services: Services, timeout: float) -> float | None:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        services.check_alive()
        if store.backlog() == 0 and store.queued_jobs() == 0:
            return time.perf_counter() - start
        time.sleep(0.25)
    return None


def one_run(args, tree: Path, layout, number: int, parts) -> RunResult:
    processes, namespaces = layout
    var = Path(tempfile.mkdtemp(prefix=f"supervisor-bench-scale-{processes}x{namespaces}-"))
    result = RunResult(processes, namespaces, number, var=str(var))
    store = PostgresStore(args, var)
    env = store.env()
    services = None
    result.load_before = os.getloadavg()[0]
    try:
        store.create()
        manage(env, "migrate", "--noinput", "-v", "0", tree=tree)
        tokens = []
        for i in range(namespaces):
            made = manage(env, "create_source", f"bench{i}", "--scopes", "ingest,read", tree=tree)
            tokens.append(made.stdout.strip())
        services = ScaledServices(env, var, processes, tree)
        services.start()
        services.wait_ready(tokens[0])
        warm = json.dumps({"events": WARM_UP}).encode()
        # Each web server's first request loads what it needs; each source gets one.
        warm_lanes = [(p, t, [warm], [len(WARM_UP)]) for p in services.ports for t in tokens]
        _, _, _, errors = lanes_ingest(args, warm_lanes)
        if errors:
            raise RuntimeError(f"warm-up POST: {errors[0]}")
        lanes = [
            (services.ports[i % processes], tokens[i % namespaces], *posting)
            for i, posting in enumerate(parts)
        ]
        result.events = sum(sum(sizes) for _, sizes in parts)
        cpu0 = cpu_snapshot(services, store)
        result.ingest_s, result.retries, result.unavailable, errors = lanes_ingest(args, lanes)
        if errors:
            result.problems += errors[:5]
            return result
        result.events_per_s = result.events / result.ingest_s
        result.caught_up_s = wait_caught_up(store, services, args.catch_up_timeout)
        cpu1 = cpu_snapshot(services, store)
        if result.caught_up_s is None:
            result.problems.append(f"still evaluating {args.catch_up_timeout:g} s after ingest")
        delta = cpu_delta(cpu0, cpu1)
        result.cpu = {
            "web": round(sum(v for k, v in delta.items() if k.startswith("web")), 1),
            "workers": round(sum(v for k, v in delta.items() if k.startswith("worker")), 1),
            "db": delta["db"],
            "beat": delta.get("beat"),
            "client": delta.get("client"),
            "others": delta["others"],
        }
        total = result.cpu["web"] + result.cpu["workers"] + result.cpu["db"]
        result.cpu_ms_per_1000 = total * 1000 / (result.events / 1000)
        (kept,) = store.query(
            "SELECT count(*) FROM core_ingestedevent WHERE event_id <> 'bench-warm-up'"
        )[0]
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
        store.close()
        try:
            store.drop()
        except Exception as exc:  # noqa: BLE001
            result.problems.append(f"drop: {exc}")
            result.ok = False
        if result.ok and not args.keep:
            shutil.rmtree(var, ignore_errors=True)


# --- output ----------------------------------------------------------------------------


def name(layout) -> str:
    processes, namespaces = layout
    each = "1 web + 1 worker" if processes == 1 else f"{processes} web + {processes} workers"
    return f"{each}, {namespaces} namespace{'s' if namespaces > 1 else ''}"


def med(results, layout, key):
    return median([getattr(r, key) for r in results if r.ok and r.layout == layout])


def med_cpu(results, layout, key):
    return median([r.cpu.get(key) for r in results if r.ok and r.layout == layout])


def tables(results: list[RunResult], events: int) -> str:
    lines = [
        "| layout (median of the correct runs) | events/s | CPU ms per 1,000 events "
        "(web + workers + PostgreSQL) | CPU s: web | workers | PostgreSQL | beat "
        "| catch-up after ingest, s | 503s re-sent | correct runs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for layout in LAYOUTS:
        runs = [r for r in results if r.layout == layout]
        if not runs:
            continue
        cells = [
            name(layout),
            fmt(med(results, layout, "events_per_s"), 0),
            fmt(med(results, layout, "cpu_ms_per_1000"), 0),
            fmt(med_cpu(results, layout, "web")),
            fmt(med_cpu(results, layout, "workers")),
            fmt(med_cpu(results, layout, "db")),
            fmt(med_cpu(results, layout, "beat")),
            fmt(med(results, layout, "caught_up_s")),
            fmt(med(results, layout, "unavailable"), 0),
            f"{sum(r.ok for r in runs)} of {len(runs)}",
        ]
        lines.append("| " + " | ".join(cells) + " |")

    def compare(label, a, b):
        rate = ratio(med(results, b, "events_per_s"), med(results, a, "events_per_s"))
        cost = ratio(med(results, b, "cpu_ms_per_1000"), med(results, a, "cpu_ms_per_1000"))
        return f"| {label} | {rate} | {cost} |"

    lines += [
        "",
        "| comparison (ratio of the medians) | events/s | CPU per event |",
        "|---|---:|---:|",
        compare("two of each / one of each, one namespace", (1, 1), (2, 1)),
        compare("two of each / one of each, four namespaces", (1, 4), (2, 4)),
        compare("four namespaces / one, one of each", (1, 1), (1, 4)),
        compare("four namespaces / one, two of each", (2, 1), (2, 4)),
        "",
        f"Each run ({events:,} events; CPU s from the first POST until caught up):",
        "",
        "| layout | run | ok | events/s | ingest s | catch-up s | 503s re-sent "
        "| CPU ms / 1,000 events | web / workers / PostgreSQL / beat CPU s | others' CPU s "
        "| load before | problems |",
        "|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in results:
        c = r.cpu
        cells = [
            name(r.layout),
            str(r.run),
            "yes" if r.ok else "NO",
            fmt(r.events_per_s, 0),
            fmt(r.ingest_s),
            fmt(r.caught_up_s),
            str(r.unavailable),
            fmt(r.cpu_ms_per_1000, 0),
            " / ".join(fmt(c.get(k)) for k in ("web", "workers", "db", "beat")) if c else "-",
            fmt(c.get("others")) if c else "-",
            fmt(r.load_before, 2),
            "; ".join(r.problems).replace("|", "/"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2000, help="tasks over the four histories")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=500, help="events per POST")
    parser.add_argument(
        "--clients", type=int, default=4, help="keep-alive clients in all, split over 4 lanes"
    )
    parser.add_argument("--sweep-interval", type=float, default=5.0, help="beat's sweep, s")
    parser.add_argument(
        "--pg-url", default="postgres://postgres@127.0.0.1:5432/supervisor_bench_scale"
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/12")
    parser.add_argument("--ingest-timeout", type=float, default=1800)
    parser.add_argument("--request-timeout", type=float, default=300)
    parser.add_argument("--catch-up-timeout", type=float, default=300)
    parser.add_argument("--keep", action="store_true", help="keep each run's var dir")
    parser.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks.md")
    parser.add_argument("--json", metavar="FILE", help="also write every run's figures here")
    args = parser.parse_args(argv)

    require_services(args.pg_url, args.redis_url)
    PostgresStore(args, Path("."))  # refuses a database not named supervisor_bench*
    about = machine(["postgres"], args)
    tree, code = checkout(None, untracked=True)
    started = datetime.now(UTC)

    each = max(1, args.tasks // PARTS)
    parts = [
        postings_of(relabel(generate(each, seed=args.seed + i).events, f"p{i}"), args.batch)
        for i in range(PARTS)
    ]
    events = sum(sum(sizes) for _, sizes in parts)
    command = f"python bench/scale_out.py --tasks {args.tasks} --runs {args.runs}"
    command += f" --clients {args.clients}" if args.clients != 4 else ""
    print(f"{events:,} events in {PARTS} histories of {each} tasks", flush=True)

    results: list[RunResult] = []

    def save_json():
        if args.json:
            data = {
                "command": command,
                "measured": f"{started:%Y-%m-%d %H:%M} UTC",
                "code": code,
                "runs": [asdict(r) for r in results],
            }
            Path(args.json).write_text(json.dumps(data, indent=1))

    for number in range(1, args.runs + 1):
        for layout in LAYOUTS:  # interleaved, so that the machine's drift touches them all
            t = time.perf_counter()
            r = one_run(args, tree, layout, number, parts)
            results.append(r)
            save_json()
            print(
                f"{name(layout)} run {number}: {'ok' if r.ok else 'FAILED'} in "
                f"{time.perf_counter() - t:.0f} s; {fmt(r.events_per_s, 0)} events/s, "
                f"{fmt(r.cpu_ms_per_1000, 0)} CPU ms / 1,000 events, cpu {r.cpu}, "
                f"caught up {fmt(r.caught_up_s)} s; {r.unavailable} 503s re-sent; "
                f"load before {r.load_before}"
                + (f"; problems: {r.problems}; files in {r.var}" if r.problems else ""),
                flush=True,
            )

    text = "\n".join(
        [
            f"Measured {started:%Y-%m-%d %H:%M} UTC on {about}.",
            "",
            f"Code: {code}.",
            "",
            f"Reproduce: `{command}` (PostgreSQL with Redis as the broker; {events:,} events "
            f"in {PARTS} histories, each posted by its own {max(1, args.clients // PARTS)} "
            f"keep-alive client(s) in batches of {args.batch}; workers of concurrency 1, "
            f"beat sweeping every {args.sweep_interval:g} s; a fresh database per run).",
            "",
            tables(results, events),
        ]
    )
    print()
    print(text)
    save_json()
    if not args.no_docs:
        launch.write_block(BEGIN, END, text, HEADING)
        print(f"\nwrote {launch.DOCS.relative_to(ROOT)}")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
