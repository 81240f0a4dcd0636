"""T3 follower on real state databases: bench/t3_follow.py's two figures, measured on
databases written by the real T3 Code server (a kit beside the clone, by default
`../shared/t3code/kit`) instead of the tests' fake one.

1. Throughput at size, real shapes. Each kit scenario is played once (kept under
   $TMPDIR/t3rf-bench/<kit build>/). One state database of about `--rows` rows is made of
   their real `orchestration_events` rows, copied again and again, the scenarios in turn:
   in each copy every UUID of every text column is replaced by a fresh one derived from
   (copy, original), and sequences are renumbered in order; the schema is the scenario
   database's own, and the projections the import reads are copied the same way. Each run
   follows it from its first row into a fresh Supervisor database (SQLite, PostgreSQL) in a
   process of its own, like t3_follow's; once per backend, the first run's default (an
   import of the projections). A run in which any copy's tasks lack the open flags
   tests/support/t3/plays.py expects for its scenario (judged 2 h after the last row)
   is reported and left out of the medians.
2. Lag on a live server. Supervisor runs as `manage.py up` runs it (a Celery worker of
   concurrency 2 and beat, following every `--lag-interval` s); the kit plays a scenario
   whose flag needs no time to pass (`duplicate`: duplicate_delegation,
   `transient-continue`: transient_failure) on a fresh real server, and a source follows
   the database from the moment T3's migrations have made its event log (`--watch
   early`: from before the file exists; a follower that opens the file in the moment
   between its creation and the migrations keeps an empty schema, see the docs). Lag =
   when the open flag was seen in Supervisor's Flag table (polled every 10 ms) minus the
   `occurred_at` of the T3 row that made it true: the first row after which the flag is
   open when the final database is replayed row by row into a Supervisor of its own.

3. Each scenario's database followed alone (SQLite): its rows, skipped rows and events.

`--kit` picks the real build: 0.0.30 (the default, `../shared/t3code/kit`) or 0.0.33
(`../shared/t3code-next/kit`, its 14 scenarios; `restart` plays two servers on one
database). Each build has its own plays and copies in the cache, its own PostgreSQL
database names and its own block in the docs.

    python bench/t3_real_follow.py --rows 5000 --runs 1 --backend sqlite --lag-samples 2 --no-docs
    python bench/t3_real_follow.py --backend both                                   # figures
    python bench/t3_real_follow.py --kit 0.0.33 --backend both                      # 0.0.33's

Results go to stdout and, unless --no-docs, into docs/benchmarks.md between markers:
0.0.30's beside the fake database's figures read from t3_follow's block there, 0.0.33's
beside 0.0.30's read from its block. Each run's results are kept in the cache
(`--from-results FILE` writes that run's block again, e.g. after 0.0.30 was measured
again).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest import mock

# bench/ is the script's folder, so on sys.path. Importing t3_follow re-executes this
# script under .venv's Python when needed, and puts the project on sys.path.
import t3_follow
from t3_follow import DOCS, GOAL_EVENTS_PER_S, GOAL_LAG_S, ROOT, django_ready

BEGIN, END = "<!-- t3_real_follow:begin -->", "<!-- t3_real_follow:end -->"
HEADING = "## Following a real T3 Code state database (bench/t3_real_follow.py)"
SHARED = ROOT.parent / "shared"
# The two real T3 builds (`--kit`); the same `kit` interface, their own caches and ports.
KITS = {
    "0.0.30": Path(os.environ.get("T3CODE_KIT", SHARED / "t3code" / "kit")),
    "0.0.33": Path(os.environ.get("T3CODE_KIT_NEXT", SHARED / "t3code-next" / "kit")),
}
DEFAULT_KIT = "0.0.30"  # the first figures' build: its block reproduces as it was
KIT = KITS[DEFAULT_KIT]  # the chosen one, set by main()
# Each build's block in docs/benchmarks.md; a later build's goes after the first's
# section, under a heading of its own, and is compared with the first's figures.
MARKERS = {
    "0.0.30": (BEGIN, END),
    "0.0.33": ("<!-- t3_real_follow_next:begin -->", "<!-- t3_real_follow_next:end -->"),
}
SUBHEADING = "### t3 {version} beside t3 {first} (bench/t3_real_follow.py --kit {version})"
CACHE = Path(tempfile.gettempdir()) / "t3rf-bench"
COPY_VERSION = 1  # bump when the copying changes: cached databases are made again
# PostgreSQL databases of this benchmark, one prefix per build (none is another
# developer's: the tests use test_*, the worktrees' runs their own names).
PG_PREFIXES = {"0.0.30": "t3rf_bench", "0.0.33": "t3rf33_bench"}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
LOG = "orchestration_events"
# Scenarios whose flag opens without time passing: the task (by role) and the flag.
LAG_FLAGS = {
    "duplicate": ("the second task", "duplicate_delegation"),
    "transient-continue": ("the task", "transient_failure"),
}
PLAY_ATTEMPTS = 3  # the kit's set-up can time out on a loaded machine


def scenario_flags(version: str, leave_out=()) -> dict[str, dict[str, list[str]]]:
    """scenario -> {task role: open flags}, as the tests have them for the build
    `version` (tests/support/t3/plays.py), less the scenarios left out."""
    from tests.support.t3.plays import EXPECTED

    expected = dict(EXPECTED[version])
    unknown = set(leave_out) - set(expected)
    if unknown:
        raise SystemExit(f"--leave-out: no such {version} scenario: {', '.join(sorted(unknown))}")
    return {name: roles for name, roles in expected.items() if name not in leave_out}


# --- the real server ---------------------------------------------------------------


def kit(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(KIT), *args], capture_output=True, text=True, timeout=timeout)


def kit_build() -> str:
    """Build (a no-op once built); the build's name, `src-<hash>`."""
    built = kit("build", timeout=900)
    if built.returncode:
        raise RuntimeError(f"kit build failed: {(built.stderr or built.stdout)[-2000:]}")
    source = next(line for line in kit("paths").stdout.splitlines() if line.startswith("source:"))
    return Path(source.split(":", 1)[1].strip()).name


def start_scenario(name: str, base: Path, *, serving: bool = False) -> subprocess.Popen:
    shutil.rmtree(base, ignore_errors=True)  # the kit wants a base without a database
    with open(base.with_suffix(".log"), "wb") as log:
        return subprocess.Popen(
            [str(KIT), "scenario", name, "--base-dir", str(base)]
            + (["--keep-serving"] if serving else []),
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def play(name: str, base: Path) -> Path:
    for _ in range(PLAY_ATTEMPTS):
        if start_scenario(name, base).wait(300) == 0:
            return base
        kit("stop", "--base-dir", str(base))
    raise RuntimeError(
        f"kit scenario {name} failed: {base.with_suffix('.log').read_text()[-2000:]}"
    )


def played(build: str, names: list[str]) -> dict[str, Path]:
    """Each scenario's base dir, played once per kit build (two at a time, as the tests)."""
    root = CACHE / build
    root.mkdir(parents=True, exist_ok=True)

    def once(name: str) -> None:
        done = root / f"{name}.ok"
        if not done.exists():
            started = time.monotonic()
            play(name, root / name)
            done.write_text(datetime.now(UTC).isoformat())
            print(f"played {name}: {time.monotonic() - started:.0f} s")

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(once, names))
    return {name: root / name for name in names}


# --- state databases made of real rows ---------------------------------------------


def read_state(path: Path) -> dict:
    """A state database's schema, migrations, log and the projections the importer reads."""
    from supervisor.connectors.t3code.schema import PROJECTIONS

    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        schema = [
            sql
            for (sql,) in db.execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL "
                "AND name != 'sqlite_sequence' ORDER BY rowid"
            )
        ]
        tables = {}
        for table in [LOG, "effect_sql_migrations"] + [t for t, _ in PROJECTIONS.values()]:
            cursor = db.execute(f'SELECT * FROM "{table}" ORDER BY rowid')
            tables[table] = ([c[0] for c in cursor.description], cursor.fetchall())
    return {"schema": schema, "tables": tables}


def create_state(path: Path, schema: list[str]) -> sqlite3.Connection:
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")  # as T3 keeps it
    for sql in schema:
        db.execute(sql)
    return db


def insert(db: sqlite3.Connection, table: str, columns: list[str], rows, *, ignore=False) -> int:
    """Rows inserted (with `ignore`, those whose keys are taken are skipped)."""
    before = db.total_changes
    db.executemany(
        f'INSERT {"OR IGNORE " if ignore else ""}INTO "{table}" ({", ".join(columns)}) '
        f"VALUES ({', '.join('?' * len(columns))})",
        rows,
    )
    return db.total_changes - before


class Renamed(dict):
    """One copy's fresh UUIDs, each derived from (copy, original)."""

    def __init__(self, copy: int):
        super().__init__()
        self.copy = copy

    def __missing__(self, original: str) -> str:
        fresh = self[original] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"t3rf/{self.copy}/{original}"))
        return fresh

    def text(self, value):
        return UUID.sub(lambda m: self[m[0]], value) if isinstance(value, str) else value


def build_state(rows: int, build: str, bases: dict[str, Path], expected: dict) -> Path:
    """The scenarios' real rows, copied in turn under fresh UUIDs until `rows` rows."""
    path = CACHE / build / f"state-{rows}-v{COPY_VERSION}.sqlite"
    meta_path = path.with_suffix(".json")
    if path.exists() and meta_path.exists():
        return path
    started = time.monotonic()
    states = {name: read_state(base / "userdata" / "state.sqlite") for name, base in bases.items()}
    played_ = {
        name: json.loads((base / "scenario.json").read_text()) for name, base in bases.items()
    }
    first = next(iter(states.values()))
    db = create_state(path, first["schema"])
    db.execute("PRAGMA synchronous = OFF")  # making the file is not what is measured
    insert(db, "effect_sql_migrations", *first["tables"]["effect_sql_migrations"])
    names, sequence, last = list(bases), 0, ""
    copies: Counter[str] = Counter()
    tasks, threads, projected, kept_once = {}, {}, 0, Counter()
    while sequence < rows:
        copy = sum(copies.values())
        name = names[copy % len(names)]
        renamed, state = Renamed(copy), states[name]
        copies[name] += 1
        for table, (columns, table_rows) in state["tables"].items():
            if table == "effect_sql_migrations":
                continue
            new = [tuple(renamed.text(v) for v in row) for row in table_rows]
            if table == LOG:
                at = columns.index("sequence")
                new = [(*row[:at], sequence + i + 1, *row[at + 1 :]) for i, row in enumerate(new)]
                sequence += insert(db, table, columns, new)
                last = max([last] + [row[columns.index("occurred_at")] for row in new])
            else:
                done = insert(db, table, columns, new, ignore=True)
                projected += done
                kept_once[table] += len(new) - done
        scenario = played_[name]
        for task in scenario["tasks"]:
            tasks[renamed.text(task["taskId"])] = {
                "scenario": name,
                "copy": copy,
                "role": task["role"],
                "open": sorted(expected[name][task["role"]]),
            }
            threads[renamed.text(task["childThreadId"])] = [name, copy]
        threads[renamed.text(scenario["parentThreadId"])] = [name, copy]
    db.commit()
    db.close()
    judge_at = datetime.fromisoformat(last) + timedelta(hours=2)
    meta = {
        "rows": sequence,
        "copies": dict(copies),
        "scenario_rows": {n: len(s["tables"][LOG][1]) for n, s in states.items()},
        "projection_rows": projected,
        "kept_once": {t: n for t, n in kept_once.items() if n},
        "judge_at": judge_at.isoformat(),
        "tasks": tasks,
        "threads": threads,
    }
    meta_path.write_text(json.dumps(meta))
    print(
        f"wrote {path}: {sequence} rows, {sum(copies.values())} copies, "
        f"{time.monotonic() - started:.0f} s"
    )
    return path


# --- fresh Supervisor databases ----------------------------------------------------


class Store(t3_follow.Store):
    """t3_follow's fresh Supervisor database, under this benchmark's PostgreSQL names
    (the build's own prefix)."""

    def __init__(self, backend: str, tag: str, args):
        super().__init__(backend, tag, args)
        self.dbname = f"{PG_PREFIXES[args.kit]}_{tag}".replace("-", "_")


def child(mode: str, store: Store, *args: str, timeout: float = 1800) -> dict:
    """t3_follow's child process, running this script."""
    with mock.patch.object(t3_follow, "__file__", __file__):
        return t3_follow.child(mode, store, *args, timeout=timeout)


# --- inside a child process --------------------------------------------------------


def child_follow(state: str, start: str, batch: int) -> dict:
    """t3_follow's timed follow, judged copy by copy; with what was not understood."""
    meta = json.loads(Path(state).with_suffix(".json").read_text())
    with mock.patch.object(t3_follow, "check_flags", lambda ns: check_copies(ns, meta)):
        result = t3_follow.child_follow(state, start, batch)
    from supervisor.core.models import DeadLetter, FollowState

    follow_state = FollowState.objects.get()
    return {
        **result,
        "skipped": follow_state.rows_skipped,
        "unknown": follow_state.unknown,
        "rows_unknown": follow_state.rows_unknown,
        "values_unknown": follow_state.values_unknown,
        "dead_letters": DeadLetter.objects.count(),
    }


def child_scenarios(states: dict[str, str]) -> dict[str, dict]:
    """Each scenario's own database followed alone from its first row, each into a source
    of its own: its rows, the rows skipped and the contract events they made."""
    django_ready()
    from supervisor.connectors.t3code.follower import Follower
    from supervisor.core.access.sources import do_create_source
    from supervisor.core.models import FollowState

    alone = {}
    for name, state in states.items():
        source, _ = do_create_source(f"t3-scenario-{name}", scopes="ingest,read")
        follower = Follower(source, state, start="log", evaluate=False)
        try:
            progress = follower.follow()
        finally:
            follower.close()
        skipped = FollowState.objects.get(source=source).rows_skipped
        alone[name] = {"rows": progress.rows, "events": progress.events, "skipped": skipped}
    return alone


def check_copies(namespace_id: int, meta: dict) -> list[str]:
    """One line per copy whose tasks' open flags are not its scenario's (or that has a
    thread with a flag), judged at `judge_at`, 2 h after the last row."""
    from supervisor.core import clock
    from supervisor.core.detection.evaluate import evaluate
    from supervisor.core.detection.scenario import _result

    at = datetime.fromisoformat(meta["judge_at"])
    with clock.virtual_clock(at):
        evaluate(namespace_id, at)
    result = _result("t3_real_follow", namespace_id)
    wrong: dict[tuple, list[str]] = {}
    for task_id, want in meta["tasks"].items():
        got = result["tasks"].get(task_id, {}).get("open")
        if got != want["open"]:
            key = (want["scenario"], want["copy"])
            wrong.setdefault(key, []).append(f"{want['role']}: {want['open']} != {got}")
    for task_id, got in result["tasks"].items():
        if task_id not in meta["tasks"] and got["open"]:
            wrong.setdefault(("?", task_id), []).append(f"unknown task: {got['open']}")
    for thread_id, got in result["threads"].items():
        if got["open"]:
            key = tuple(meta["threads"].get(thread_id, ("?", thread_id)))
            wrong.setdefault(key, []).append(f"thread {thread_id}: {got['open']}")
    return [f"{name} copy {copy}: {'; '.join(lines)}" for (name, copy), lines in wrong.items()]


def child_lag(names: list[str], samples: int, interval: float, early: bool) -> dict:
    """Supervisor as `up` runs it; each sample a scenario played on a live real server."""
    django_ready()
    var = Path(os.environ["SUPERVISOR_VAR_DIR"])
    env = {**os.environ, "SUPERVISOR_T3_FOLLOW_INTERVAL": str(interval)}
    taken, failed_plays = [], 0
    with t3_follow.services(var, env):
        time.sleep(3)  # the worker's start
        for index in range(samples):
            name = names[index % len(names)]
            sample, failures = live_sample(name, var / f"live{index:02d}", index, early)
            taken.append(sample)
            failed_plays += failures
    for sample in taken:
        if sample["seen"] is not None:
            sample.update(first_row_flagging(sample))
    return {"samples": taken, "failed_plays": failed_plays, "interval": interval}


def has_log(path: Path) -> bool:
    """The file exists and T3's migrations have made its event log."""
    with (
        contextlib.suppress(sqlite3.Error),
        contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.05)) as db,
    ):
        return (
            db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (LOG,)).fetchone() is not None
        )
    return False


def watch(path: Path, name: str):
    """A t3code source following `path` from the next beat on; its namespace's id."""
    from supervisor.core.access.sources import do_create_source
    from supervisor.core.models import Source

    source, _ = do_create_source(name, scopes="ingest,read")
    Source.objects.filter(pk=source.pk).update(
        connector="t3code", connector_settings={"db_path": str(path)}
    )
    return source


def live_sample(name: str, base: Path, index: int, early: bool) -> tuple[dict, int]:
    """One play on a live server, followed by the beat: when the flag was seen open (wall
    clock) and on which task; (sample, plays that failed). The source watches the path
    from before the file exists (`early`) or from when the file has its event log."""
    from supervisor.core import clock
    from supervisor.core.models import Flag, Source

    role, kind = LAG_FLAGS[name]
    path = base / "userdata" / "state.sqlite"
    worker_log = base.parent / "worker.log"
    logged = worker_log.stat().st_size
    for attempt in range(PLAY_ATTEMPTS):
        label = f"t3-live-{index}-{attempt}"
        source = watch(path, label) if early else None
        began = time.time()
        proc = start_scenario(name, base, serving=True)
        appeared = migrated = watched = seen = subject = ended = None
        while time.time() - began < 300 and (ended is None or time.time() - ended < 30):
            if appeared is None and path.exists():
                appeared = time.time() - began
            if migrated is None and appeared is not None and has_log(path):
                migrated = time.time() - began
            if source is None and migrated is not None:
                source, watched = watch(path, label), time.time() - began
            if seen is None and source is not None:
                subject = (
                    Flag.objects.filter(namespace_id=source.namespace_id, kind=kind, state="open")
                    .values_list("subject_id", flat=True)
                    .first()
                )
                if subject is not None:
                    seen = time.time()
            if ended is None and proc.poll() is not None:
                ended = time.time()
            if ended is not None and seen is not None:
                break
            time.sleep(0.01)
        kit("stop", "--base-dir", str(base))
        if source is not None:
            Source.objects.filter(pk=source.pk).update(revoked_at=clock.now())
        if proc.poll() == 0:
            break
    else:
        raise RuntimeError(f"kit scenario {name} failed: {base.with_suffix('.log').read_text()}")
    task = {t["role"]: t for t in json.loads((base / "scenario.json").read_text())["tasks"]}[role]
    return {
        "scenario": name,
        "flag": kind,
        "state": str(path),
        "task": task["taskId"],
        "subject_ok": subject == task["taskId"],
        "seen": seen,
        "file_after_s": appeared,
        "log_after_s": migrated,
        "watched_after_s": 0.0 if early else watched,
        "play_s": (ended or time.time()) - began,
        **worker_errors(worker_log, logged),
    }, attempt


def worker_errors(log: Path, offset: int) -> dict:
    """What the worker logged as failed since `offset`: tracebacks, and their last lines."""
    with open(log, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    ends = {e[:160] for e in re.findall(r"^[\w.]+(?:Error|Exception): .*$", text, re.MULTILINE)}
    return {"tracebacks": text.count("Traceback"), "errors": sorted(ends)[:3]}


def first_row_flagging(sample: dict) -> dict:
    """The T3 row that made the flag true: the database replayed row by row into a
    source of its own, judged at each row's `occurred_at`; and the lag from it."""
    from supervisor.connectors.t3code.follower import Follower
    from supervisor.core import clock
    from supervisor.core.access.sources import do_create_source
    from supervisor.core.detection.evaluate import evaluate
    from supervisor.core.models import Flag

    state = read_state(Path(sample["state"]))
    replay = Path(sample["state"]).parent.parent / "replay.sqlite"
    db = create_state(replay, state["schema"])
    for table, (columns, rows) in state["tables"].items():
        if table != LOG:
            insert(db, table, columns, rows)  # the projections, for the mapper's look-ups
    columns, rows = state["tables"][LOG]
    at = columns.index("occurred_at")
    first = next((i for i, row in enumerate(rows) if sample["task"] in str(row)), 0)
    insert(db, LOG, columns, rows[:first])
    db.commit()
    source, _ = do_create_source(f"t3-replay-{Path(sample['state']).parts[-3]}")
    follower = Follower(source, str(replay), start="log", evaluate=False)
    flag = Flag.objects.filter(
        namespace_id=source.namespace_id, kind=sample["flag"], subject_id=sample["task"]
    )
    try:
        for row in rows[first:]:
            insert(db, LOG, columns, [row])
            db.commit()
            follower.follow()
            when = datetime.fromisoformat(row[at])
            with clock.virtual_clock(when):
                evaluate(source.namespace_id, when)
            if flag.filter(state=Flag.OPEN).exists():
                return {
                    "row": row[columns.index("sequence")],
                    "row_type": row[columns.index("event_type")],
                    "committed": row[at],
                    "lag": sample["seen"] - when.timestamp(),
                }
    finally:
        follower.close()
        db.close()
    return {"row": None, "lag": None}


# --- the parent process ------------------------------------------------------------


def fake_figures(
    begin: str = t3_follow.BEGIN, end: str = t3_follow.END, suffix: str = ""
) -> tuple[dict[str, dict[str, float]], str]:
    """A block's summary table in the docs, t3_follow's by default (the columns named
    after the backends, each + `suffix`): {figure: {backend: value}}, and when."""
    block = DOCS.read_text().split(begin, 1)[1].split(end, 1)[0]
    when = block.strip().split(" on ", 1)[0].removeprefix("Measured ")
    table = block.split("\n| figure", 1)[1].split("\n\n", 1)[0].splitlines()
    names = {"SQLite" + suffix: "sqlite", "PostgreSQL" + suffix: "postgres"}
    header = [c.strip() for c in table[0].split("|")]
    columns = [(i, names[c]) for i, c in enumerate(header) if c in names]
    figures = {}
    for line in table[2:]:
        cells = [c.strip() for c in line.split("|")]
        with contextlib.suppress(ValueError):
            figures[cells[1]] = {b: float(cells[i + 1].replace(",", "")) for i, b in columns}
    return figures, when


def block_scenarios(begin: str, end: str) -> dict[str, dict[str, int]]:
    """A block's scenarios: {name: {"rows": n, and, if the block has its table of the
    scenarios followed alone, "skipped", "events"}}."""
    block = DOCS.read_text().split(begin, 1)[1].split(end, 1)[0]
    found: dict[str, dict[str, int]] = {}
    copies = re.search(r"in turn, each copy under fresh UUIDs: (.*?)\. Times", block)
    for name, rows in re.findall(r"([\w-]+) ×\d+ \((\d+) rows\)", copies[1] if copies else ""):
        found[name] = {"rows": int(rows)}
    if "\n| scenario | T3 rows |" in block:
        table = block.split("\n| scenario | T3 rows |", 1)[1].split("\n\n", 1)[0]
        for line in table.splitlines()[2:]:
            cells = [c.strip().replace(",", "") for c in line.split("|")]
            if not re.fullmatch(r"[\w-]+", cells[1]):
                continue  # the totals
            with contextlib.suppress(ValueError, IndexError):
                found[cells[1]] = {
                    "rows": int(cells[2]),
                    "skipped": int(cells[3]),
                    "events": int(cells[4]),
                }
    return found


def lag_of(results: dict) -> list[float]:
    return [s["lag"] for s in results["lag"]["samples"] if s.get("lag") is not None]


def real_figures(results: dict) -> dict[str, dict[str, float]]:
    """The same figures as t3_follow's table, from this run's medians."""
    figures: dict[str, dict[str, float]] = {}
    for backend, result in results.items():
        good = [r for r in result["runs"] if r["wrong"] == 0]

        def median(key, runs=good):
            return statistics.median(r[key] for r in runs) if runs else float("nan")

        wall, values = median("wall"), {}
        values["following the log from its first row: T3 rows/s"] = median("rows") / wall
        values["contract events sent/s"] = median("events") / wall
        values["contract events per T3 row"] = median("events") / median("rows")
        values["wall time, s"] = wall
        values["CPU time of the follower's process, s"] = median("cpu")
        if "import" in result:
            imported = result["import"]
            values["first run's default, the import: T3 rows covered/s"] = (
                result["rows"] / imported["wall"]
            )
            values["import wall time, s"] = imported["wall"]
            values["contract events from the import"] = imported["imported"]
        lags = lag_of(result)
        if lags:
            values["lag, row commit to open flag, median s"] = statistics.median(lags)
            values["lag, p95 nearest rank, s"] = t3_follow.percentile(lags, 0.95)
            values["lag, max, s"] = max(lags)
        for label, value in values.items():
            figures.setdefault(label, {})[backend] = value
    return figures


GOALS = {
    "following the log from its first row: T3 rows/s": GOAL_EVENTS_PER_S,
    "first run's default, the import: T3 rows covered/s": GOAL_EVENTS_PER_S,
    "lag, row commit to open flag, median s": GOAL_LAG_S,
    "lag, p95 nearest rank, s": GOAL_LAG_S,
}


def report(about: str, meta: dict, args, results: dict, alone: dict) -> str:
    backends = list(results)
    first = args.kit == DEFAULT_KIT
    if first:  # beside the fake database's figures
        fake, fake_when = fake_figures()
        fake["contract events per T3 row"] = {
            b: fake["contract events sent/s"][b]
            / fake["following the log from its first row: T3 rows/s"][b]
            for b in fake["contract events sent/s"]
        }
        mine_name, theirs_name, ratio_name = "real", "fake", "real / fake"
    else:  # beside the first build's, as its block has them
        fake, fake_when = fake_figures(*MARKERS[DEFAULT_KIT], suffix=" real")
        mine_name, theirs_name, ratio_name = args.kit, DEFAULT_KIT, f"{args.kit} / {DEFAULT_KIT}"
    real = real_figures(results)
    copies = ", ".join(
        f"{name} ×{n} ({meta['scenario_rows'][name]} rows)" for name, n in meta["copies"].items()
    )
    kept = (
        ", ".join(
            f"{t.removeprefix('orchestration_v2_projection_')} {n}"
            for t, n in meta["kept_once"].items()
        )
        or "none"
    )
    lines = [
        f"Measured {args.measured} UTC on {about}.",
        "",
        f"Code: {args.code}. T3: the kit's real "
        f"server (t3 {args.kit}, `{KITS[args.kit].parent.name}/kit`, build {args.build}).",
        "",
        "Reproduce: `python bench/t3_real_follow.py"
        + ("" if first else f" --kit {args.kit}")
        + f" --rows {args.rows} --runs {args.runs} "
        f"--backend {args.backend} --lag-samples {args.lag_samples}"
        + ("" if args.watch == "migrated" else f" --watch {args.watch}")
        + (f" --leave-out {','.join(args.leave_out)}" if args.leave_out else "")
        + "`.",
        "",
        f"State database: {meta['rows']:,} rows, {sum(meta['copies'].values()):,} copies of "
        f"the real logs of {len(meta['copies'])} kit scenarios in turn, each copy under fresh "
        f"UUIDs: {copies}. Times are the scenarios' own (every copy of a scenario at the same "
        f"moments). The projections the import reads were copied the same way "
        f"({meta['projection_rows']:,} rows; rows whose keys hold no UUID, kept once: "
        f"{kept}). Batches of {args.batch} rows. Flags judged at {meta['judge_at'][:19]}, "
        "2 h after the last row.",
        "",
        (
            f"Fake: the figures of bench/t3_follow.py's block above (measured {fake_when}, "
            "tests/support/t3/statedb.py's database of 100,026 rows)."
            if first
            else f"{DEFAULT_KIT}: the figures of the t3 {DEFAULT_KIT} block above "
            f"(measured {fake_when})."
        ),
        "",
    ]
    if args.leave_out:
        lines += [f"Left out: {', '.join(args.leave_out)} (`--leave-out`).", ""]
    names = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
    header = "| figure (median of the correct runs) |"
    for b in backends:
        header += f" {names[b]} {mine_name} | {names[b]} {theirs_name} | {ratio_name} |"
    header += f" goal | best {mine_name} / goal |"
    lines += [header, "|---" + "|---:" * (header.count("|") - 2) + "|"]
    for label, values in real.items():
        fmt = "{:,.0f}"
        if "lag" in label or label.endswith("per T3 row"):
            fmt = "{:.2f}"
        elif label.endswith(", s"):
            fmt = "{:.1f}"
        cells = []
        for b in backends:
            mine, theirs = values.get(b), fake.get(label, {}).get(b)
            cells += [
                fmt.format(mine) if mine is not None else "",
                fmt.format(theirs) if theirs is not None else "",
                f"{mine / theirs:.2f}" if mine is not None and theirs else "",
            ]
        goal = GOALS.get(label)
        best = (min if "lag" in label else max)(values.values())
        lines.append(
            f"| {label} | "
            + " | ".join(cells)
            + f" | {f'{goal:,}' if goal else ''} | {f'{best / goal:.2f}' if goal else ''} |"
        )
    correct = [
        f"{sum(r['wrong'] == 0 for r in results[b]['runs'])} of {len(results[b]['runs'])}"
        for b in backends
    ]
    lines.append("| correct runs | " + " |  |  | ".join(correct) + " |  |  |  |  |")
    lines += scenario_table(args, meta, alone, first)
    lines += [
        "",
        "Each run:",
        "",
        "| backend | run | rows | events | wall s | CPU s | rows/s | events/s | skipped | "
        "not understood | dead letters | wrong copies |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for backend in backends:
        runs = results[backend]["runs"]
        if "import" in results[backend]:
            runs = runs + [dict(results[backend]["import"], run="import")]
        for r in runs:
            rows = r["rows"] or meta["rows"]
            lines.append(
                f"| {backend} | {r['run']} | {rows:,} | {r['events']:,} | {r['wall']:.1f} | "
                f"{r['cpu']:.1f} | {rows / r['wall']:,.0f} | {r['events'] / r['wall']:,.0f} | "
                f"{r['skipped']:,} | {r['rows_unknown'] + r['values_unknown']} "
                f"{json.dumps(r['unknown']) if r['unknown'] else ''} | {r['dead_letters']} | "
                f"{r['wrong']} {'; '.join(r['problems'])} |"
            )
    lines += [
        "",
        f"Lag samples ({args.lag_samples} per backend, one live play each, beat every "
        f"{args.lag_interval:g} s; the source made "
        + (
            "before the server made the file"
            if args.watch == "early"
            else "once the file had its event log (`--watch migrated`)"
        )
        + "; times in s from the kit's start):",
        "",
        "| backend | # | scenario | flag | the row that made it true | its occurred_at | "
        "lag s | file at | log at | watched at | play |",
        "|---|---:|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for backend in backends:
        lag = results[backend]["lag"]
        for index, s in enumerate(lag["samples"], 1):
            row = f"{s.get('row')} `{s.get('row_type')}`" if s.get("row") else "not found"
            seconds = "never seen" if s["seen"] is None else "?"
            if s.get("lag") is not None:
                seconds = f"{s['lag']:.2f}"
            if s["seen"] is not None and not s["subject_ok"]:
                seconds += " (on another task)"
            lines.append(
                f"| {backend} | {index} | {s['scenario']} | {s['flag']} | {row} | "
                f"{s.get('committed', '')} | {seconds} | {s['file_after_s'] or 0:.2f} | "
                f"{s['log_after_s'] or 0:.2f} | {s['watched_after_s'] or 0:.1f} | "
                f"{s['play_s']:.1f} |"
            )
    lines.append("")
    for backend in backends:
        lag = results[backend]["lag"]
        lines.append(
            f"- {backend}: {lag['failed_plays']} play(s) failed and were played again; "
            f"tracebacks in the worker's log: "
            f"{sum(x['tracebacks'] for x in lag['samples'])}"
            + "".join(
                f"; sample {i}: {x['tracebacks']}, {'; '.join(x['errors'])}"
                for i, x in enumerate(lag["samples"], 1)
                if x["tracebacks"]
            )
            + "."
        )
    return "\n".join(lines)


def scenario_table(args, meta: dict, alone: dict, first: bool) -> list[str]:
    """Each scenario's own database followed alone: rows, skipped, events; for a later
    build, beside the first build's (from its block: its table, else its rows)."""
    theirs = {} if first else block_scenarios(*MARKERS[DEFAULT_KIT])
    lines = [
        "",
        "Each scenario's database followed alone from its first row (SQLite, one source "
        "each)" + ("" if first else f"; t3 {DEFAULT_KIT}'s from its block") + ":",
        "",
        "| scenario | T3 rows | skipped | contract events | events per row |"
        + ("" if first else f" {DEFAULT_KIT} rows | {DEFAULT_KIT} events per row |"),
        "|---|---:|---:|---:|---:|" + ("" if first else "---:|---:|"),
    ]
    names = list(alone) + [n for n in theirs if n not in alone]
    for name in names:
        mine, other = alone.get(name), theirs.get(name, {})
        cells = ["", "", "", ""]
        if mine:
            cells = [
                f"{mine['rows']:,}",
                f"{mine['skipped']:,}",
                f"{mine['events']:,}",
                f"{mine['events'] / mine['rows']:.2f}" if mine["rows"] else "",
            ]
        if not first:
            cells += [
                f"{other['rows']:,}" if "rows" in other else "",
                f"{other['events'] / other['rows']:.2f}" if "events" in other else "",
            ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if alone:
        rows = sum(a["rows"] for a in alone.values())
        events = sum(a["events"] for a in alone.values())
        skipped = sum(a["skipped"] for a in alone.values())
        cells = [f"{rows:,}", f"{skipped:,}", f"{events:,}", f"{events / rows:.2f}"]
        if not first:
            known = [o for o in theirs.values() if "events" in o]
            their_rows = sum(o["rows"] for o in theirs.values())
            cells += [f"{their_rows:,}" if theirs else "", ""]
            if known:
                their_events = sum(o["events"] for o in known)
                cells[-1] = f"{their_events / sum(o['rows'] for o in known):.2f}"
        lines.append("| all, one of each | " + " | ".join(cells) + " |")
    both = [n for n in alone if "events" in theirs.get(n, {}) or "rows" in theirs.get(n, {})]
    if not first and both and len(both) < len(alone):
        rows = sum(alone[n]["rows"] for n in both)
        events = sum(alone[n]["events"] for n in both)
        skipped = sum(alone[n]["skipped"] for n in both)
        cells = [f"{rows:,}", f"{skipped:,}", f"{events:,}", f"{events / rows:.2f}"]
        cells.append(f"{sum(theirs[n]['rows'] for n in both):,}")
        known = [theirs[n] for n in both if "events" in theirs[n]]
        cells.append(
            f"{sum(o['events'] for o in known) / sum(o['rows'] for o in known):.2f}"
            if len(known) == len(both)
            else ""
        )
        lines.append(f"| the {len(both)} both builds play | " + " | ".join(cells) + " |")
    return lines


def write_docs(text: str, version: str = DEFAULT_KIT) -> None:
    """t3_follow's writer under the build's markers. The first time: the first build's
    block in a section of its own right after t3_follow's (its hand-written text
    included), before the next `## `; a later build's under a heading of its own at the
    end of the first build's section (after its hand-written text)."""
    begin, end = MARKERS[version]
    current = DOCS.read_text()
    if begin not in current:
        after = t3_follow.END if version == DEFAULT_KIT else MARKERS[DEFAULT_KIT][1]
        if after not in current:
            raise SystemExit(f"docs/benchmarks.md has no {after}: measure {DEFAULT_KIT} first")
        head, tail = current.split(after, 1)
        cut = tail.find("\n## ")
        cut = len(tail) if cut < 0 else cut
        heading = (
            HEADING
            if version == DEFAULT_KIT
            else SUBHEADING.format(version=version, first=DEFAULT_KIT)
        )
        section = f"\n\n{heading}\n\n{begin}\n{end}\n"
        DOCS.write_text(head + after + tail[:cut].rstrip("\n") + section + tail[cut:])
    with mock.patch.multiple(t3_follow, BEGIN=begin, END=end):
        t3_follow.write_docs(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--kit", choices=sorted(KITS), default=DEFAULT_KIT, help="the real T3 build to play"
    )
    parser.add_argument(
        "--leave-out",
        type=lambda text: [n for n in text.split(",") if n],
        default=[],
        help="scenarios not to copy (comma-separated); said in the block",
    )
    parser.add_argument(
        "--from-results",
        type=Path,
        help="write the report of a run's saved results again (e.g. once the first "
        "build's block, which a later build's is compared with, was measured again)",
    )
    parser.add_argument("--rows", type=int, default=100_000, help="rows in the state file")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=5000, help="rows per transaction")
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="sqlite")
    parser.add_argument("--no-import", action="store_true", help="skip the import runs")
    parser.add_argument("--lag-samples", type=int, default=8)
    parser.add_argument("--lag-scenarios", default="duplicate,transient-continue")
    parser.add_argument("--lag-interval", type=float, default=1.0)
    parser.add_argument(
        "--watch",
        choices=("migrated", "early"),
        default="migrated",
        help="lag: the source is made once the file has its event log (default), or before "
        "the file exists",
    )
    t3_follow.add_service_arguments(parser, redis_db=12)
    args = parser.parse_args()
    global KIT
    KIT = KITS[args.kit]

    if args.child == "scenarios":
        print(json.dumps(child_scenarios(json.loads(args.state))))
        return
    if args.child == "follow":
        print(json.dumps(child_follow(args.state, args.start, args.batch)))
        return
    if args.child == "lag":
        names = args.lag_scenarios.split(",")
        lag = child_lag(names, args.lag_samples, args.lag_interval, args.watch == "early")
        print(json.dumps(lag))
        return

    if args.from_results:
        saved = json.loads(args.from_results.read_text())
        args = argparse.Namespace(**{**vars(args), **saved["args"]})
        text = report(saved["about"], saved["meta"], args, saved["results"], saved["alone"])
        print(text)
        if not args.no_docs:
            write_docs(text, args.kit)
        return

    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    about = t3_follow.machine(args, backends)
    print(about)
    args.build = kit_build()
    expected = scenario_flags(args.kit, args.leave_out)
    bases = played(args.build, list(expected))
    # Where T3 races, the flags are those of the shape each play wrote.
    from tests.support.t3.plays import expected as expected_of

    for name, base in bases.items():
        scenario = json.loads((base / "scenario.json").read_text())
        expected[name] = expected_of(args.kit, name, scenario)
    state = build_state(args.rows, args.build, bases, expected)
    meta = json.loads(state.with_suffix(".json").read_text())
    with Store("sqlite", "scenarios", args) as store:
        states = {name: str(base / "userdata" / "state.sqlite") for name, base in bases.items()}
        alone = child("scenarios", store, "--state", json.dumps(states))
    print("alone", json.dumps(alone))
    results: dict[str, dict] = {b: {"runs": [], "rows": meta["rows"]} for b in backends}
    follow = ["--state", str(state), "--batch", str(args.batch)]
    for run in range(1, args.runs + 1):
        for backend in backends:  # interleaved: a busy spell hits both
            with Store(backend, f"r{run}", args) as store:
                result = child("follow", store, *follow, "--start", "log")
            results[backend]["runs"].append({**result, "run": run})
            print(backend, run, json.dumps(result)[:2000])
    for backend in backends if not args.no_import else ():
        with Store(backend, "import", args) as store:
            results[backend]["import"] = child("follow", store, *follow, "--start", "import")
        print(backend, "import", json.dumps(results[backend]["import"])[:2000])
    lag = ["--lag-samples", str(args.lag_samples), "--lag-interval", str(args.lag_interval)]
    for backend in backends:
        with Store(backend, "lag", args) as store:
            results[backend]["lag"] = child(
                "lag",
                store,
                *lag,
                "--lag-scenarios",
                args.lag_scenarios,
                "--watch",
                args.watch,
                "--kit",
                args.kit,
            )
        print(backend, "lag", json.dumps(results[backend]["lag"]))
    args.measured = f"{datetime.now(UTC):%Y-%m-%d %H:%M}"
    args.code = t3_follow.commit().replace(" (the T3 follower)", "")
    keep = ("kit", "build", "measured", "code", "rows", "runs", "batch", "backend")
    keep += ("lag_samples", "lag_interval", "watch", "leave_out")
    saved = CACHE / args.build / f"results-{args.rows}-{datetime.now(UTC):%Y%m%dT%H%M%S}.json"
    saved.write_text(
        json.dumps(
            {
                "about": about,
                "meta": meta,
                "args": {k: getattr(args, k) for k in keep},
                "results": results,
                "alone": alone,
            }
        )
    )
    print(f"results kept in {saved} (--from-results)")
    text = report(about, meta, args, results, alone)
    print(text)
    if not args.no_docs:
        write_docs(text, args.kit)


if __name__ == "__main__":
    main()
