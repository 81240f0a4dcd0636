"""CPU per event of `apply_events`, in-process: the web server's share of ingest.

Applies `bench/history.py`'s events, sorted by time and cut into batches, through
`apply_events` (the API's code path without HTTP, Celery or evaluation) into a fresh
store, and reports this process's CPU time per event (`time.process_time`, so the
database server's own CPU is not in it), then the same again under cProfile with its top
functions. PostgreSQL: a database named `supervisor_bench_profile_ingest`, dropped and
made again (`--pg-url`); `--sqlite` for the embedded store.

    python bench/profile_ingest.py --tasks 1000                  # this tree, PostgreSQL
    python bench/profile_ingest.py --tasks 1000 --tree /tmp/main  # another checkout
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_PY = ROOT / ".venv" / "bin" / "python"
if VENV_PY.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
    os.execv(str(VENV_PY), [str(VENV_PY), *sys.argv])

sys.path.insert(0, str(Path(__file__).resolve().parent))
from history import generate  # noqa: E402

PG_URL = "postgres://postgres@127.0.0.1:5432/supervisor_bench_profile_ingest"


def fresh_postgres(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    assert name.startswith("supervisor_bench"), name
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--limit", type=int, default=25, help="rows of the profile")
    parser.add_argument("--tree", default=str(ROOT), help="the checkout to import")
    parser.add_argument("--sqlite", action="store_true", help="the embedded store instead")
    parser.add_argument("--pg-url", default=PG_URL)
    args = parser.parse_args(argv)

    var = tempfile.mkdtemp(prefix="supervisor-profile-ingest-")
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL"):
        os.environ.pop(name, None)
    os.environ.update(DJANGO_SETTINGS_MODULE="supervisor.settings", SUPERVISOR_VAR_DIR=var)
    if not args.sqlite:
        fresh_postgres(args.pg_url)
        os.environ["DATABASE_URL"] = args.pg_url + "?pool=false"
    sys.path.insert(0, args.tree)
    os.chdir(args.tree)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from supervisor.core.access.sources import do_create_source
    from supervisor.core.ingest.apply import apply_events

    call_command("migrate", verbosity=0, interactive=False)
    history = generate(args.tasks, seed=args.seed)
    events = sorted(history.events, key=lambda e: (e["at"], e["id"]))
    half = len(events) // 2
    runs = {"timed": events[:half], "profiled": events[half:]}
    print(f"tree: {args.tree}; store: {connection.vendor}; {len(events):,} events")
    source, _ = do_create_source("profile", None, "ingest,read")
    for label, chunk in runs.items():
        batches = [chunk[i : i + args.batch] for i in range(0, len(chunk), args.batch)]
        profile = cProfile.Profile() if label == "profiled" else None
        cpu, wall = time.process_time(), time.perf_counter()
        for batch in batches:
            if profile:
                profile.runcall(apply_events, source, batch)
            else:
                apply_events(source, batch)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        print(
            f"{label}: {len(chunk):,} events in {len(batches)} batches of {args.batch}: "
            f"{wall:.2f} s wall, {cpu:.2f} s CPU of this process, "
            f"{cpu / len(chunk) * 1000:.3f} ms CPU per event, {len(chunk) / wall:,.0f} events/s"
        )
        if profile:
            out = io.StringIO()
            stats = pstats.Stats(profile, stream=out)
            stats.sort_stats("tottime").print_stats(args.limit)
            lines = out.getvalue().splitlines()
            start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
            print("\n".join(lines[start:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
