"""Where ingest and evaluation spend their time, in-process and under cProfile.

Applies a share of `bench/history.py`'s events to a fresh SQLite store through
`apply_events` (the code path of the HTTP API, without HTTP and without Celery), then
profiles what the beat sweep does with the backlog: one `evaluate` of a chunk of 500
touched tasks (the sweep's chunk), and a whole `sweep`.

    python bench/profile_evaluate.py --tasks 5000 --fraction 0.5
    python bench/profile_evaluate.py --tree /tmp/a-clean-checkout      # another tree

Stopping halfway (`--fraction 0.5`) leaves many tasks unfinished, as they are while a
burst is being ingested; `--fraction 1` profiles the settled end state.
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


def top(profile: cProfile.Profile, limit: int, pattern: str = "supervisor") -> str:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("cumulative").print_stats(pattern, limit)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return "\n".join(lines[start:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks-per-parent", type=int, default=20)
    parser.add_argument("--fraction", type=float, default=0.5, help="share of events applied")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--limit", type=int, default=30, help="rows of each profile")
    parser.add_argument("--tree", default=str(ROOT), help="the checkout to import")
    args = parser.parse_args(argv)

    var = tempfile.mkdtemp(prefix="supervisor-profile-")
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL"):
        os.environ.pop(name, None)
    os.environ.update(DJANGO_SETTINGS_MODULE="supervisor.settings", SUPERVISOR_VAR_DIR=var)
    sys.path.insert(0, args.tree)
    os.chdir(args.tree)
    import django

    django.setup()
    from django.core.management import call_command

    from supervisor.core import clock
    from supervisor.core.access.sources import do_create_source
    from supervisor.core.detection.evaluate import evaluate
    from supervisor.core.detection.sweep import CHUNK, due_subjects, sweep
    from supervisor.core.ingest.apply import apply_events
    from supervisor.core.models import Task, Thread

    call_command("migrate", verbosity=0, interactive=False)
    source, _ = do_create_source("profile", None, "ingest,read")
    history = generate(args.tasks, seed=args.seed, tasks_per_parent=args.tasks_per_parent)
    events = history.events[: int(len(history.events) * args.fraction)]
    batches = [events[i : i + args.batch] for i in range(0, len(events), args.batch)]

    ingest_profile = cProfile.Profile()
    started = time.perf_counter()
    for batch in batches:
        ingest_profile.runcall(apply_events, source, batch)
    took = time.perf_counter() - started
    print(f"store: {var} (SQLite)")
    print(
        f"apply_events: {len(events):,} events in {len(batches)} batches, {took:.1f} s under "
        f"cProfile ({len(events) / took:,.0f} events/s)\n"
    )
    print(top(ingest_profile, args.limit))

    now = clock.now()
    ns = source.namespace_id
    tasks, threads = due_subjects(now, ns)[ns]
    chunk_tasks, chunk_threads = sorted(tasks)[:CHUNK], sorted(threads)[:CHUNK]
    unfinished = Task.objects.filter(known=True).exclude(
        status__in=["completed", "failed", "cancelled", "interrupted"]
    )
    print(
        f"\nbacklog: {len(tasks):,} tasks and {len(threads):,} threads touched and not "
        f"evaluated; {unfinished.count():,} known tasks without a terminal report"
    )
    evaluate_profile = cProfile.Profile()
    started = time.perf_counter()
    evaluate_profile.runcall(evaluate, ns, now, tasks=chunk_tasks, threads=chunk_threads)
    took = time.perf_counter() - started
    evaluated = Task.objects.filter(namespace_id=ns, evaluated_at=now).count()
    print(
        f"one sweep chunk: evaluate({len(chunk_tasks)} tasks, {len(chunk_threads)} threads) took "
        f"{took:.1f} s under cProfile and judged {evaluated:,} tasks "
        f"(the touched ones, their siblings under the same parent threads, ...)\n"
    )
    print(top(evaluate_profile, args.limit))

    started = time.perf_counter()
    count = sweep(clock.now(), ns)
    took = time.perf_counter() - started
    left = Thread.objects.filter(namespace_id=ns, evaluated_at__isnull=True).count()
    print(f"\nthe rest as one sweep: {count:,} subjects in {took:.1f} s ({left} threads left)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
