"""CPU per event through ingest and detection, in-process, on a fleet of every shape.

The demo fleet (`supervisor.demo.fleet`, every failure of the field reports and the
healthy shapes, each task with the flags it must raise) is applied in batches of 500
to a fresh PostgreSQL store through `apply_events`, and after each batch the
evaluation job's `catch_up` judges what it touched: one evaluation per batch, the
worst case for detection (the service coalesces a backlog's jobs). The clock is the
fleet's own, moved to each batch's last event. Counted apart: the Python CPU of ingest
and of detection, and the CPU of the PostgreSQL backend serving each (from /proc). At
the fleet's end every subject's open flags are compared with the fleet's expectations.

    python bench/detect_cpu.py --tasks 2000 --runs 3 --baseline HEAD~5 --write
    python bench/detect_cpu.py --data history --tasks 2000 --runs 3 --write

`--data history` takes bench/history.py's history (seed 000's shapes, whose flags open
and resolve often on the way) instead of the fleet; its block is written apart, as is
one with `--per-parent` other than 20 (tasks per parent thread: a wide parent's wakes
name all its children, which every judged child reads).

Each run is a process of its own in the code under test (the working tree, or a clean
`git archive` of `--baseline`); codes alternate run by run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import launch  # noqa: E402  (re-executes under .venv first)

MARKERS = "<!-- detect_cpu{}:begin -->", "<!-- detect_cpu{}:end -->"
HEADING = "## CPU per event through ingest and detection (bench/detect_cpu.py)"
FIGURES = ("ingest_py", "ingest_pg", "detect_py", "detect_pg", "total")


def child(args) -> dict:
    """One run, in the tree `args.tree`: the figures as a dict (printed as JSON)."""
    sys.path.insert(0, args.tree)
    os.chdir(args.tree)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="supervisor.settings",
        SUPERVISOR_VAR_DIR=os.path.join(args.var, "var"),
        DATABASE_URL=args.database,
    )
    for name in ("CELERY_BROKER_URL", "CHANNEL_LAYER_URL", "CACHE_URL"):
        os.environ.pop(name, None)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from supervisor.core import clock
    from supervisor.core.access.sources import do_create_source
    from supervisor.core.contract.events import parse_timestamp
    from supervisor.core.detection.evaluate import catch_up, evaluate
    from supervisor.core.ingest.apply import apply_events, mark_committed
    from supervisor.core.models import Flag
    from supervisor.demo.fleet import Fleet

    call_command("migrate", verbosity=0, interactive=False)
    if args.data == "history":
        from history import generate

        scenario = generate(args.tasks, seed=args.seed, tasks_per_parent=args.per_parent).scenario()
    else:
        parents = max(3, args.tasks // args.per_parent)
        fleet = Fleet(args.seed, tasks=args.tasks, parents=parents, rate=20)
        scenario = fleet.as_scenario()
    events, until = scenario["events"], parse_timestamp(scenario["until"])
    source, _ = do_create_source("bench", None, "ingest,read")
    ns = source.namespace_id
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]

    def backend_cpu() -> float:
        return launch.pid_cpu(backend)

    spent = dict.fromkeys(("ingest_py", "ingest_pg", "detect_py", "detect_pg"), 0.0)
    with clock.virtual_clock(parse_timestamp(events[0]["at"])):
        for start in range(0, len(events), args.batch):
            batch = events[start : start + args.batch]
            clock.set_virtual(parse_timestamp(batch[-1]["at"]))
            pg, py = backend_cpu(), time.process_time()
            result = apply_events(source, batch)
            mark_committed(ns, sorted(result.touched_tasks), sorted(result.touched_threads))
            py_ingested, pg_ingested = time.process_time(), backend_cpu()
            catch_up(ns, clock.now(), result.touched_tasks, result.touched_threads)
            py_judged, pg_judged = time.process_time(), backend_cpu()
            spent["ingest_py"] += py_ingested - py
            spent["ingest_pg"] += pg_ingested - pg
            spent["detect_py"] += py_judged - py_ingested
            spent["detect_pg"] += pg_judged - pg_ingested
        clock.set_virtual(until)
        evaluate(ns, until)  # what the clock alone opens by the fleet's end: not counted
    expected = {
        (kind, subject, flag)
        for kind, subjects in (
            ("task", scenario["expect_open"]["tasks"]),
            ("thread", scenario["expect_open"]["threads"]),
        )
        for subject, flags in subjects.items()
        for flag in flags
    }
    found = set(
        Flag.objects.filter(
            namespace_id=ns, state="open", subject_type__in=("task", "thread")
        ).values_list("subject_type", "subject_id", "kind")
    )
    wrong = {subject for _, subject, _ in expected ^ found}
    figures = {name: seconds * 1000 / len(events) for name, seconds in spent.items()}
    figures["total"] = sum(figures.values())
    return {
        **figures,
        "events": len(events),
        "subjects": len(scenario["expect_open"]["tasks"]) + len(scenario["expect_open"]["threads"]),
        "flags": len(expected),
        "wrong": len(wrong),
    }


def run_once(tree: Path, args, n: int) -> dict:
    import psycopg

    name = f"bench_detect_cpu_{os.getpid()}_{n}"
    admin = args.pg_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    var = tempfile.TemporaryDirectory(prefix="supervisor-detect-cpu-")
    try:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "--tree",
                str(tree),
                "--var",
                var.name,
                "--database",
                args.pg_url.rsplit("/", 1)[0] + "/" + name,
                "--tasks",
                str(args.tasks),
                "--seed",
                str(args.seed),
                "--batch",
                str(args.batch),
                "--data",
                args.data,
                "--per-parent",
                str(args.per_parent),
            ],
            capture_output=True,
            text=True,
            timeout=3600,
            check=False,
        )
        if out.returncode:
            raise SystemExit(f"a run failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        var.cleanup()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name}")


def report(codes: dict[str, str], runs: dict[str, list[dict]], args, machine: str) -> str:
    names = list(runs)
    first = runs[names[0]][0]
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine}.",
        "",
        "Code:",
        *(f"- {name}: {codes[name]}" for name in names),
        "",
        f"Reproduce: `python bench/detect_cpu.py --data {args.data} --tasks {args.tasks} "
        f"--runs {args.runs}"
        + (f" --per-parent {args.per_parent}" if args.per_parent != 20 else "")
        + (f" --baseline {args.baseline}" if args.baseline else "")
        + "` (PostgreSQL; in-process; batches of "
        f"{args.batch}, one evaluation after each).",
        "",
        f"{'Fleet' if args.data == 'fleet' else 'bench/history.py'}: seed {args.seed}, "
        f"{args.tasks:,} tasks ({args.per_parent} per parent thread), {first['events']:,} events, "
        f"{first['subjects']:,} subjects, {first['flags']:,} flags expected open at its end.",
        "",
        "| ms of CPU per event (median of the runs) | "
        + " | ".join(names)
        + (" | after / before |" if len(names) == 2 else " |"),
        "|---|" + "---:|" * (len(names) + (1 if len(names) == 2 else 0)),
    ]
    labels = {
        "ingest_py": "ingest, Python",
        "ingest_pg": "ingest, its PostgreSQL backend",
        "detect_py": "detection, Python",
        "detect_pg": "detection, its PostgreSQL backend",
        "total": "**total**",
    }
    for figure in FIGURES:
        values = [launch.median([r[figure] for r in runs[name]]) for name in names]
        row = f"| {labels[figure]} | " + " | ".join(f"{v:.3f}" for v in values)
        if len(values) == 2:
            row += f" | {launch.ratio(values[1], values[0])}"
        lines.append(row + " |")
    lines.append(
        "| subjects whose open flags differ from the fleet's expectations | "
        + " | ".join(", ".join(str(r["wrong"]) for r in runs[name]) for name in names)
        + (" | |" if len(names) == 2 else " |")
    )
    lines += ["", "Each run (ms per event: ingest Python + backend, detection Python + backend):"]
    for name in names:
        for n, r in enumerate(runs[name], start=1):
            lines.append(
                f"- {name} {n}: {r['ingest_py']:.3f} + {r['ingest_pg']:.3f}, "
                f"{r['detect_py']:.3f} + {r['detect_pg']:.3f}; total {r['total']:.3f}; "
                f"wrong {r['wrong']}"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument(
        "--data",
        choices=("fleet", "history"),
        default="fleet",
        help="the demo fleet (every shape), or bench/history.py's seed-000-like history",
    )
    parser.add_argument(
        "--per-parent",
        type=int,
        default=20,
        help="tasks per parent thread (a wide parent: every child's wakes go to it)",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", help="a commit to measure beside the working tree")
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    parser.add_argument("--var", help=argparse.SUPPRESS)
    parser.add_argument("--database", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return 0
    trees, codes = {}, {}
    if args.baseline:
        trees["before"], codes["before"] = launch.checkout(args.baseline)
        trees["after"], codes["after"] = launch.checkout(None)
    else:
        trees["now"], codes["now"] = launch.checkout(None)
    machine = launch.machine([], args)
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for n in range(args.runs):
        for name, tree in trees.items():
            result = run_once(tree, args, n)
            runs[name].append(result)
            print(f"{name} {n + 1}: {json.dumps(result)}", flush=True)
    text = report(codes, runs, args, machine)
    print(text)
    if args.write:
        tag = ("" if args.data == "fleet" else "_history") + (
            f"_{args.per_parent}_per_parent" if args.per_parent != 20 else ""
        )
        launch.write_block(MARKERS[0].format(tag), MARKERS[1].format(tag), text, HEADING)
    return 0


if __name__ == "__main__":
    sys.exit(main())
