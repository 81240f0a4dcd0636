"""Pages and the beat sweep at size: 10%, 30% and 100% of issue 10's history.

For each scale: a fresh PostgreSQL database, `manage.py migrate`, `bench/size_data.py`
(COPY; at 100%: 160,000 tasks of which 100,000 open, 1,000,000 runs, 3.8 million
events), then in a child process with Django set up against that database (in-process,
`django.test.Client` with a logged-in superuser, `force_login`):

- each page (the overview, the task list's first page, a page 11 deep by following the
  list's cursors, the last page, two filtered lists, the task with the most runs, the
  thread that delegated it): 3 warm-up requests, then `--requests` timed ones (wall
  time around `client.get`), p50 and p95, and the CPU they used (this process and its
  PostgreSQL backend, from /proc); and the SQL queries of one more request
  (`CaptureQueriesContext`), with its slowest query;
- the beat sweep, one call of `supervisor.core.detection.sweep.sweep(now)` at the data's reference
  time: (a) the steady state, every open task having a `next_check_at` and 1% of them due;
  (b) `due_subjects(now)` alone with every open task due. Each in a transaction rolled
  back afterwards, so every run sees the same rows.

Every figure is the median of `--runs` runs. Results go to stdout and, unless
--no-docs, into docs/benchmarks.md between the at_size markers.

    python bench/at_size.py --scales 0.01 --runs 1 --no-docs      # try it
    python bench/at_size.py --scales 0.1,0.3,1.0 --runs 3          # the figures
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from launch import ROOT, VENV_PY, checkout, machine, write_block  # noqa: E402  (re-executes under .venv)

BEGIN, END = "<!-- at_size:begin -->", "<!-- at_size:end -->"
HEADING = "## Pages and the sweep at size (bench/at_size.py)"
GOAL_PAGE_P95_MS = 100
GOAL_SWEEP_S = 2.0
PAGES = [
    ("overview", "`/`"),
    ("list", "`/tasks/`"),
    ("list_deep", "`/tasks/?cursor=…` page 11"),
    ("list_last", "`/tasks/?cursor=…` last page"),
    ("flag", "`/tasks/?flag=stale_result`"),
    ("status_q", "`/tasks/?status=failed&q=flaky`"),
    ("detail", "`/tasks/<pk>/`, the task with the most runs"),
    ("detail_typical", "`/tasks/<pk>/`, a task with the mean number of runs"),
    ("thread", "`/threads/<pk>/` (its parent)"),
]


def admin_url(args) -> str:
    return args.pg.rsplit("/", 1)[0] + "/postgres"


def psql(args, sql: str) -> None:
    import psycopg

    with psycopg.connect(admin_url(args), autocommit=True) as conn:
        conn.execute(sql)


def database(args, scale: float) -> str:
    return f"{args.pg.rsplit('/', 1)[0]}/{args.prefix}_{round(scale * 100):03d}"


def prepare(args, scale: float) -> dict:
    """A fresh database for the scale, migrated and filled; returns size_data's figures."""
    url = database(args, scale)
    name = url.rsplit("/", 1)[1]
    psql(args, f'DROP DATABASE IF EXISTS "{name}"')
    psql(args, f'CREATE DATABASE "{name}"')
    env = child_env(url)
    subprocess.run(
        [str(VENV_PY), "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=600
    )
    out = subprocess.run(
        [str(VENV_PY), str(ROOT / "bench" / "size_data.py"), "--db", url, "--scale", str(scale)],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=3600,
        capture_output=True,
        text=True,
    )
    sys.stderr.write(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def child_env(url: str) -> dict:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=url,
        SUPERVISOR_VAR_DIR=os.environ.get("SUPERVISOR_VAR_DIR", "/tmp/supervisor-bench-size"),
        DJANGO_SETTINGS_MODULE="supervisor.settings",
        DEBUG="0",
    )
    return env


# --- the child: Django against one database -------------------------------------------


def percentile(values: list[float], share: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(share * len(ordered) + 0.5) - 1))]


def cpu_seconds(connection) -> tuple[float, float]:
    """CPU seconds used so far by this process and by its PostgreSQL backend (read from
    /proc: the server runs on this machine)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        (pid,) = cur.fetchone()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    backend = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return time.process_time(), backend


def child(args) -> dict:
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection, transaction
    from django.db.models import Count
    from django.http import QueryDict
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from supervisor.api.pagination import encode
    from supervisor.core.detection.evaluate import affected_subjects
    from supervisor.core.detection.sweep import due_subjects, sweep
    from supervisor.core.facts.snapshot import TERMINAL_STATUSES
    from supervisor.core.models import Run, Task
    from supervisor.core.queries.task_query import PAGE_SIZE
    from supervisor.web.pages.task_list import task_list_context

    with connection.cursor() as cur:
        cur.execute("SELECT value FROM bench_size_meta WHERE key = 'now'")
        now = datetime.fromisoformat(cur.fetchone()[0])
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(
        username="bench-size", defaults={"is_superuser": True, "is_staff": True}
    )
    client = Client()
    client.force_login(user)

    # The URLs: cursors as the list gives them out.
    params = QueryDict(mutable=True)
    for _ in range(10):
        params["cursor"] = task_list_context(params)["next_cursor"]
    deep = f"/tasks/?cursor={params['cursor']}"
    known = Task.objects.filter(known=True).order_by("-delegated_at", "-pk")
    total = known.count()
    size = PAGE_SIZE
    last_start = ((total - 1) // size) * size
    before = known[last_start - 1]
    last = f"/tasks/?cursor={encode(before.delegated_at, before.pk)}"
    busiest = Run.objects.values("thread_id").annotate(n=Count("pk")).order_by("-n").first()
    task = Task.objects.get(child_thread_id=busiest["thread_id"])
    typical_runs = round(Run.objects.count() / max(1, Task.objects.count()))
    typical = (
        Task.objects.filter(status="completed")
        .annotate(n=Count("child_thread__runs"))
        .filter(n=typical_runs)
        .order_by("-delegated_at")
        .first()
    )
    urls = {
        "overview": "/",
        "list": "/tasks/",
        "list_deep": deep,
        "list_last": last,
        "flag": "/tasks/?flag=stale_result",
        "status_q": "/tasks/?status=failed&q=flaky",
        "detail": f"/tasks/{task.pk}/",
        "detail_typical": f"/tasks/{typical.pk}/",
        "thread": f"/threads/{task.parent_thread_id}/",
    }
    out = {
        "now": now.isoformat(),
        "tasks": total,
        "detail_runs": busiest["n"],
        "typical_runs": typical_runs,
        "pages": {},
    }
    for name, url in urls.items():
        for _ in range(3):
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
        runs = []
        for _ in range(args.runs):
            times = []
            cpu = cpu_seconds(connection)
            for _ in range(args.requests):
                t = time.perf_counter()
                client.get(url)
                times.append((time.perf_counter() - t) * 1000)
            used = [b - a for a, b in zip(cpu, cpu_seconds(connection), strict=True)]
            runs.append(
                {
                    "p50": statistics.median(times),
                    "p95": percentile(times, 0.95),
                    "cpu_ms": [1000 * u / args.requests for u in used],
                }
            )
        with CaptureQueriesContext(connection) as queries:
            client.get(url)
        slowest = max(queries.captured_queries, key=lambda q: float(q["time"]))
        out["pages"][name] = {
            "url": url,
            "runs": runs,
            "p50": statistics.median(r["p50"] for r in runs),
            "p95": statistics.median(r["p95"] for r in runs),
            # CPU per request, this process and its PostgreSQL backend (medians of the
            # runs): what a page costs, less moved by other load than its wall time.
            "cpu_ms": [statistics.median(r["cpu_ms"][i] for r in runs) for i in (0, 1)],
            "queries": len(queries.captured_queries),
            "slowest_ms": float(slowest["time"]) * 1000,
            "slowest_sql": slowest["sql"][:400],
        }
        print(name, json.dumps(out["pages"][name])[:300], file=sys.stderr, flush=True)

    # The sweep. (a) steady state: what the rows say is due (1% of the open tasks). One
    # sweep first, committed: it judges the due tasks' neighbourhoods once, as earlier
    # sweeps and evaluation jobs would have, so that the generated flags of those tasks
    # are what the rules find; then the same tasks are made due again.
    open_tasks = Task.objects.exclude(status__in=TERMINAL_STATUSES)
    out["open_tasks"] = open_tasks.count()
    due_tasks = Task.objects.filter(next_check_at__lte=now)
    out["due_steady"] = due_tasks.count()
    due_pks = list(due_tasks.values_list("pk", flat=True))
    judged, _ = affected_subjects(1, set(due_tasks.values_list("task_id", flat=True)), ())
    out["sweep_judged"] = len(judged)
    t = time.perf_counter()
    sweep(now)
    out["settle_s"] = time.perf_counter() - t
    Task.objects.filter(pk__in=due_pks).update(next_check_at=now - timedelta(seconds=1))
    sweeps, counted = [], []
    for _ in range(args.runs):
        with transaction.atomic():
            t = time.perf_counter()
            counted.append(sweep(now))
            sweeps.append(time.perf_counter() - t)
            transaction.set_rollback(True)
    out["sweep_s"], out["sweep_runs"] = statistics.median(sweeps), sweeps
    out["sweep_subjects"] = statistics.median(counted)
    # (b) every open task due: the query that finds them, alone.
    scans, found = [], []
    for _ in range(args.runs):
        with transaction.atomic():
            open_tasks.update(next_check_at=now)
            t = time.perf_counter()
            due = due_subjects(now)
            scans.append(time.perf_counter() - t)
            found.append(sum(len(tasks) for tasks, _ in due.values()))
            transaction.set_rollback(True)
    out["due_all_s"], out["due_all_runs"] = statistics.median(scans), scans
    out["due_all_found"] = found[0]
    print("sweep", json.dumps({k: v for k, v in out.items() if k != "pages"}), file=sys.stderr)
    return out


# --- the report -----------------------------------------------------------------------


def fmt(value, digits=0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def report(results: list[dict], about: str, revision: str, command: str, started) -> str:
    scales = [r["scale"] for r in results]
    head = " | ".join(f"{round(s * 100)}%" for s in scales)
    lines = [
        f"Measured {started:%Y-%m-%d %H:%M} UTC on {about}.",
        "",
        f"Code: {revision}.",
        "",
        f"Reproduce: `{command}`.",
        "",
        "Data (bench/size_data.py, COPY), per scale:",
        "",
        f"| | {head} |",
        "|---|" + "---:|" * len(scales),
    ]

    def row(label, values):
        lines.append(f"| {label} | " + " | ".join(values) + " |")

    counts = [r["load"]["counts"] for r in results]
    row("tasks (known)", [fmt(c["core_task"]) for c in counts])
    row("of which open (no terminal report)", [fmt(r["load"]["open_tasks"]) for r in results])
    row("runs", [fmt(c["core_run"]) for c in counts])
    row("ingested events", [fmt(c["core_ingestedevent"]) for c in counts])
    row("threads", [fmt(c["core_thread"]) for c in counts])
    row(
        "task reports / wakes / background items",
        [
            f"{c['core_taskreport']:,} / {c['core_wake']:,} / {c['core_backgrounditem']:,}"
            for c in counts
        ],
    )
    row(
        "flags (open and resolved) / change-log rows",
        [f"{c['core_flag']:,} / {c['core_change']:,}" for c in counts],
    )
    row(
        "rows loaded, s of COPY (rows/s)",
        [
            f"{r['load']['rows']:,}, {r['load']['copy_s']:.0f} s ({r['load']['rows_per_s']:,}/s)"
            for r in results
        ],
    )
    row(
        "generation in Python / ANALYZE, s",
        [f"{r['load']['generate_s']:.0f} / {r['load']['analyze_s']:.0f}" for r in results],
    )
    lines += [
        "",
        f"Pages: server time per request in ms, p50 / p95 (median of {results[0]['runs']} runs "
        f"of {results[0]['requests']} requests, after 3 warm-up requests); goal p95 < "
        f"{GOAL_PAGE_P95_MS} ms. SQL queries per request, the same at every scale when they do "
        "not grow with the data.",
        "",
        f"| page | {' | '.join(f'{round(s * 100)}% p50 / p95' for s in scales)} "
        f"| queries ({' / '.join(f'{round(s * 100)}%' for s in scales)}) "
        f"| p95 / goal at {round(scales[-1] * 100)}% |",
        "|---|" + "---:|" * len(scales) + "---:|---:|",
    ]
    for key, label in PAGES:
        cells = [f"{fmt(r['pages'][key]['p50'])} / {fmt(r['pages'][key]['p95'])}" for r in results]
        queries = " / ".join(str(r["pages"][key]["queries"]) for r in results)
        ratio = results[-1]["pages"][key]["p95"] / GOAL_PAGE_P95_MS
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {queries} | {ratio:.2f} |")
    lines += [
        "",
        "The task with the most runs has "
        + " / ".join(f"{r['measure']['detail_runs']:,}" for r in results)
        + " runs (its timeline lists three lines per run); the one with the mean number has "
        + " / ".join(str(r["measure"]["typical_runs"]) for r in results)
        + ".",
    ]
    if all("cpu_ms" in r["pages"][key] for r in results for key, _ in PAGES):
        lines += [
            "",
            f"CPU per request at {round(scales[-1] * 100)}%, ms, this process + its PostgreSQL "
            "backend (median of the runs; less moved by other load than the wall times): "
            + "; ".join(
                f"{key} {cpu[0]:.0f} + {cpu[1]:.0f}"
                for key, _ in PAGES
                for cpu in [results[-1]["pages"][key]["cpu_ms"]]
            )
            + ".",
        ]
    lines += [
        "",
        f"Slowest query of each page at {round(scales[-1] * 100)}% (one request, ms): "
        + "; ".join(f"{key} {results[-1]['pages'][key]['slowest_ms']:.0f}" for key, _ in PAGES)
        + ".",
        "",
        f"The beat sweep, one call at the data's reference time (median of {results[0]['runs']}"
        f" runs, each rolled back); goal < {GOAL_SWEEP_S:.0f} s with 100,000 open tasks:",
        "",
        f"| | {head} |",
        "|---|" + "---:|" * len(scales),
    ]
    row("open tasks", [fmt(r["measure"]["open_tasks"]) for r in results])
    row(
        "(a) `sweep(now)`, steady state: tasks due",
        [fmt(r["measure"]["due_steady"]) for r in results],
    )
    row(
        "(a) subjects it evaluated (the due ones)",
        [fmt(r["measure"]["sweep_subjects"]) for r in results],
    )
    row(
        "(a) their parent threads' tasks (what an event would have judged with them: "
        "`affected_subjects`; the sweep judges the due ones alone)",
        [fmt(r["measure"]["sweep_judged"]) for r in results],
    )
    row("(a) `sweep(now)`, s", [fmt(r["measure"]["sweep_s"], 2) for r in results])
    row("(a) / goal", [f"{r['measure']['sweep_s'] / GOAL_SWEEP_S:.2f}" for r in results])
    row(
        "(b) `due_subjects(now)` alone, every open task due, s",
        [fmt(r["measure"]["due_all_s"], 2) for r in results],
    )
    row("(b) tasks it found", [fmt(r["measure"]["due_all_found"]) for r in results])
    return "\n".join(lines)


def pg_version(args) -> str:
    import psycopg

    with psycopg.connect(admin_url(args)) as conn:
        return "PostgreSQL " + conn.execute("SHOW server_version").fetchone()[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="0.1,0.3,1.0")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=20, help="timed requests per page and run")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432/bench_size")
    parser.add_argument("--prefix", default="bench_size", help="database name prefix")
    parser.add_argument("--reuse", action="store_true", help="measure the existing databases")
    parser.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--json", metavar="FILE", help="also write every figure here")
    parser.add_argument(
        "--from-json", metavar="FILE", help="only render (and write) a --json file's figures"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return 0
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        text = report(
            saved["results"],
            saved["about"],
            saved["revision"],
            saved["command"],
            datetime.fromisoformat(saved["started"]),
        )
        print(text)
        if not args.no_docs:
            write_block(BEGIN, END, text, HEADING)
        return 0

    started = datetime.now(UTC)
    about = machine([], args) + f"; {pg_version(args)}"
    revision = checkout(None, untracked=True)[1]
    results = []
    for scale in [float(s) for s in args.scales.split(",")]:
        url = database(args, scale)
        if args.reuse:
            load = json.loads(Path(f"/tmp/{args.prefix}_{round(scale * 100):03d}.json").read_text())
        else:
            load = prepare(args, scale)
            Path(f"/tmp/{args.prefix}_{round(scale * 100):03d}.json").write_text(json.dumps(load))
        print(f"scale {scale}: {json.dumps(load)}", flush=True)
        out = subprocess.run(
            [
                str(VENV_PY),
                __file__,
                "--child",
                "--runs",
                str(args.runs),
                "--requests",
                str(args.requests),
            ],
            cwd=ROOT,
            env=child_env(url),
            check=True,
            timeout=7200,
            stdout=subprocess.PIPE,
            text=True,
        )
        measure = json.loads(out.stdout.strip().splitlines()[-1])
        results.append(
            {
                "scale": scale,
                "load": load,
                "measure": measure,
                "pages": measure["pages"],
                "runs": args.runs,
                "requests": args.requests,
            }
        )
        if not args.keep:
            psql(args, f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}"')
    command = f"python bench/at_size.py --scales {args.scales} --runs {args.runs}"
    text = report(results, about, revision, command, started)
    print()
    print(text)
    if args.json:
        saved = {
            "results": results,
            "about": about,
            "revision": revision,
            "command": command,
            "started": started.isoformat(),
        }
        Path(args.json).write_text(json.dumps(saved, indent=1))
    if not args.no_docs:
        write_block(BEGIN, END, text, HEADING)
        print("\nwrote docs/benchmarks.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
