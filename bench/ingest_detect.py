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
import http.client
import json
import os
import platform
import queue
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing, suppress
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_PY = ROOT / ".venv" / "bin" / "python"

# The services and the DB drivers live in the project's environment: run there.
if VENV_PY.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
    os.execv(str(VENV_PY), [str(VENV_PY), *sys.argv])

sys.path.insert(0, str(Path(__file__).resolve().parent))
from history import History, generate  # noqa: E402

DOCS = ROOT / "docs" / "benchmarks.md"
TREE = ROOT  # where the services run from: the working tree, or a --snapshot of a commit
BEGIN, END = "<!-- ingest_detect:begin -->", "<!-- ingest_detect:end -->"
GOAL_PG_EVENTS_PER_S = 5000
GOAL_REPORT_S = 10.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- processes -------------------------------------------------------------------------


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def group_cpu(pgid: int) -> float:
    """CPU seconds (user + system, reaped children included) of a live process group."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # fields[0] is the state (field 3): pgrp is field 5, utime..cstime fields 14..17.
        if int(fields[2]) == pgid:
            total += sum(int(v) for v in fields[11:15])
    return total / CLK_TCK


def pid_cpu(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:13]) / CLK_TCK


class Services:
    """The web server, worker and beat of one run, each in its own process group."""

    def __init__(self, env: dict, var: Path, port: int, py_spy: str | None):
        self.env, self.var, self.port, self.py_spy = env, var, port, py_spy
        self.procs: dict[str, subprocess.Popen] = {}
        self.spies: list[subprocess.Popen] = []

    def commands(self) -> dict[str, list[str]]:
        py = str(VENV_PY)
        return {  # as supervisor/core/management/commands/up.py starts them
            "web": [
                py,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "supervisor.asgi:application",
            ],
            "worker": [
                py,
                "-m",
                "celery",
                "-A",
                "supervisor",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                "2",
                "--without-gossip",
                "--without-mingle",
            ],
            "beat": [
                py,
                "-m",
                "celery",
                "-A",
                "supervisor",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(self.var / "celerybeat-schedule"),
            ],
        }

    def start(self, only: tuple[str, ...] | None = None) -> None:
        for name, command in self.commands().items():
            if only and name not in only:
                continue
            with open(self.var / f"{name}.log", "wb") as log:
                self.procs[name] = subprocess.Popen(
                    command,
                    cwd=TREE,
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )

    def spy(self) -> None:
        """py-spy on the web server and the worker (pool children included)."""
        if not self.py_spy:
            return
        for name in ("web", "worker"):
            if name not in self.procs:
                continue
            out = self.var / f"profile-{name}.txt"
            self.spies.append(
                subprocess.Popen(
                    [
                        self.py_spy,
                        "record",
                        "--pid",
                        str(self.procs[name].pid),
                        "--subprocesses",
                        "--format",
                        "raw",
                        "--rate",
                        "50",
                        "--nonblocking",
                        "-o",
                        str(out),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )

    def check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(
                    f"{name} exited with {proc.returncode}; see {self.var}/{name}.log"
                )

    def wait_ready(self, token: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        web = worker = False
        while time.monotonic() < deadline:
            self.check_alive()
            if not web:
                try:
                    status, _ = get(self.port, token, "/api/v1/flags?limit=1", timeout=5)
                    web = status == 200
                except OSError:
                    pass
            if not worker:
                worker = (
                    "worker" not in self.procs
                    or b" ready." in (self.var / "worker.log").read_bytes()
                )
            if web and worker:
                return
            time.sleep(0.2)
        raise TimeoutError(f"services not ready after {timeout} s (web {web}, worker {worker})")

    def cpu(self) -> dict[str, float]:
        return {
            name: group_cpu(proc.pid) for name, proc in self.procs.items() if proc.poll() is None
        }

    def stop(self) -> None:
        for spy in self.spies:  # py-spy writes its file on SIGINT
            if spy.poll() is None:
                os.killpg(spy.pid, signal.SIGINT)
        for proc in self.procs.values():
            if proc.poll() is None:
                # The leader alone, as `manage.py up` does: Celery stops its own pool; the
                # group is killed only if something is left after the grace period.
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        for proc in [*self.procs.values(), *self.spies]:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        # The worker's pool children share its group: make sure none is left behind.
        for proc in self.procs.values():
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def manage(env: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(VENV_PY), "manage.py", *args],
        cwd=TREE,
        env=env,
        capture_output=True,
        timeout=timeout,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}"
        )
    return done


# --- HTTP ------------------------------------------------------------------------------


def get(port: int, token: str, path: str, timeout: float = 30) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"{}")
    finally:
        conn.close()


def api_open_flags(port: int, token: str) -> set[tuple[str, str, str]]:
    found, cursor = set(), None
    for _ in range(1000):
        path = "/api/v1/flags?state=open&limit=200" + (f"&cursor={cursor}" if cursor else "")
        status, body = get(port, token, path)
        if status != 200:
            raise RuntimeError(f"GET flags: {status} {body}")
        found |= {(f["subject"]["type"], f["subject"]["id"], f["kind"]) for f in body["items"]}
        cursor = body["next"]
        if not cursor:
            return found
    raise RuntimeError("GET flags: too many pages")


@dataclass
class Ingest:
    seconds: float
    events: int
    batches: int
    latencies: list[float]
    retries: int
    client_cpu: float
    errors: list[str]


def ingest(
    port: int,
    token: str,
    bodies: list[bytes],
    sizes: list[int],
    clients: int,
    timeout: float,
    request_timeout: float,
) -> Ingest:
    """POST every body from `clients` keep-alive connections; batches in order, each
    client taking the next one when it is free."""
    todo: queue.Queue[int] = queue.Queue()
    for i in range(len(bodies)):
        todo.put(i)
    latencies = [0.0] * len(bodies)
    errors: list[str] = []
    retries = [0]
    last = [0.0]
    lock = threading.Lock()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    deadline = time.monotonic() + timeout

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=request_timeout)
        try:
            while not errors and time.monotonic() < deadline:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                sent = time.perf_counter()
                for attempt in range(3):
                    try:
                        conn.request("POST", "/api/v1/events", body=bodies[i], headers=headers)
                        resp = conn.getresponse()
                        raw = resp.read()
                        break
                    except (ConnectionError, http.client.HTTPException, TimeoutError) as exc:
                        conn.close()  # re-sending is safe: accepted ids count as duplicates
                        conn = http.client.HTTPConnection(
                            "127.0.0.1", port, timeout=request_timeout
                        )
                        with lock:
                            retries[0] += 1
                        if attempt == 2:
                            with lock:
                                errors.append(f"batch {i}: {exc!r}")
                            return
                now = time.perf_counter()
                latencies[i] = now - sent
                with lock:
                    last[0] = max(last[0], now)
                if resp.status != 200:
                    with lock:
                        errors.append(f"batch {i}: HTTP {resp.status} {raw[:300]!r}")
                    return
                body = json.loads(raw)
                if body["rejected"] or body["accepted"] + body["duplicates"] != sizes[i]:
                    with lock:
                        errors.append(f"batch {i}: {str(body)[:300]}")
        finally:
            conn.close()

    cpu0 = time.process_time()
    start = time.perf_counter()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(1.0, deadline - time.monotonic() + request_timeout))
    if any(t.is_alive() for t in threads) or not todo.empty():
        errors.append(f"ingest did not finish within {timeout} s")
    return Ingest(
        seconds=(last[0] or time.perf_counter()) - start,
        events=sum(sizes),
        batches=len(bodies),
        latencies=latencies,
        retries=retries[0],
        client_cpu=time.process_time() - cpu0,
        errors=errors,
    )


# --- the store -------------------------------------------------------------------------


class Store:
    """Where a run keeps its data, fresh for each run, read directly for polling."""

    backend = ""

    def __init__(self, args, var: Path):
        self.args, self.var = args, var

    def env(self) -> dict:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("SUPERVISOR_")
            and k
            not in {
                "DATABASE_URL",
                "CELERY_BROKER_URL",
                "CHANNEL_LAYER_URL",
                "SECRET_KEY",
                "SECRET_KEY_FILE",
                "PORT",
                "CELERY_TASK_ALWAYS_EAGER",
                "DEBUG",
            }
        }
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "supervisor.settings",
                "SUPERVISOR_VAR_DIR": str(self.var),
                "SUPERVISOR_SWEEP_INTERVAL": str(self.args.sweep_interval),
                "PYTHONUNBUFFERED": "1",
            }
        )
        return env

    def create(self) -> None: ...
    def drop(self) -> None: ...
    def query(self, sql: str) -> list[tuple]: ...
    def close(self) -> None: ...
    def db_cpu(self) -> dict[int, float]:
        return {}

    def version(self) -> str: ...

    def open_flags(self) -> set[tuple[str, str, str]]:
        return set(
            self.query("SELECT subject_type, subject_id, kind FROM core_flag WHERE state = 'open'")
        )

    def backlog(self) -> int:
        """Tasks and threads touched by an event since their last evaluation."""
        total = 0
        for table in ("core_task", "core_thread"):
            total += self.query(
                f"SELECT count(*) FROM {table} WHERE last_event_at IS NOT NULL AND "
                "(evaluated_at IS NULL OR last_event_at > evaluated_at)"
            )[0][0]
        return total

    def flag_rows(self) -> dict[str, int]:
        """Flag rows by kind and state: every opening is a row, transient ones included."""
        rows = self.query("SELECT kind, state, count(*) FROM core_flag GROUP BY kind, state")
        return {f"{kind}/{state}": n for kind, state, n in sorted(rows)}

    def queued_jobs(self) -> int:
        """Celery messages waiting in the broker (filesystem: one file each)."""
        folder = self.var / "broker" / "queue"
        return sum(1 for _ in folder.iterdir()) if folder.exists() else 0


class SqliteStore(Store):
    backend = "sqlite"

    def __init__(self, args, var):
        super().__init__(args, var)
        self.conn = None

    def query(self, sql):
        import sqlite3

        if self.conn is None:
            path = self.var / "supervisor.sqlite3"
            self.conn = sqlite3.connect(
                f"file:{path}?mode=ro",
                uri=True,
                timeout=30,
                isolation_level=None,
                check_same_thread=False,
            )
        return self.conn.execute(sql).fetchall()

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def version(self):
        import sqlite3

        return f"SQLite {sqlite3.sqlite_version}"


class PostgresStore(Store):
    backend = "postgres"

    def __init__(self, args, var):
        super().__init__(args, var)
        self.conn = None
        self.url = args.pg_url
        self.dbname = self.url.rsplit("/", 1)[1].split("?")[0]
        if not self.dbname.startswith("supervisor_bench"):
            raise SystemExit(
                f"refusing to drop {self.dbname!r}: the bench database's name must "
                "start with supervisor_bench"
            )
        self.admin_url = self.url.rsplit("/", 1)[0] + "/postgres"

    def env(self):
        env = super().env()
        env["DATABASE_URL"] = self.url
        env["CELERY_BROKER_URL"] = self.args.redis_url
        return env

    def _admin(self, *statements):
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
            for statement in statements:
                conn.execute(statement)

    def create(self):
        self._admin(
            f'DROP DATABASE IF EXISTS "{self.dbname}" WITH (FORCE)',
            f'CREATE DATABASE "{self.dbname}"',
        )
        import redis

        redis.Redis.from_url(self.args.redis_url, socket_timeout=10).flushdb()

    def drop(self):
        self.close()
        self._admin(f'DROP DATABASE IF EXISTS "{self.dbname}" WITH (FORCE)')
        import redis

        redis.Redis.from_url(self.args.redis_url, socket_timeout=10).flushdb()

    def query(self, sql):
        import psycopg

        if self.conn is None:
            self.conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        return self.conn.execute(sql).fetchall()

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def db_cpu(self):
        """pid -> CPU seconds of the live server backends connected to the bench database."""
        pids = self.query(
            "SELECT pid FROM pg_stat_activity "
            f"WHERE datname = '{self.dbname}' AND pid <> pg_backend_pid()"
        )
        return {pid: pid_cpu(pid) for (pid,) in pids}

    def version(self):
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
            return "PostgreSQL " + conn.execute("SHOW server_version").fetchone()[0]

    def queued_jobs(self):
        import redis

        return redis.Redis.from_url(self.args.redis_url, socket_timeout=10).llen("celery")


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


def busy_cpu() -> float:
    """CPU seconds the whole machine spent busy (all but idle and iowait) since boot."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / CLK_TCK


def cpu_snapshot(services: Services, store: Store) -> dict[str, float]:
    cpu = services.cpu()
    cpu["machine"] = busy_cpu()
    cpu["db"] = store.db_cpu()
    cpu["client"] = time.process_time()
    return cpu


def cpu_delta(a: dict, b: dict) -> dict:
    delta = {k: round(b[k] - a[k], 1) for k in b if k in a and k not in {"db", "machine"}}
    # Backends come and go with the pools: count each live one from its earlier reading
    # (or from its start); CPU of backends that ended in between is not seen.
    delta["db"] = round(sum(cpu - a["db"].get(pid, 0.0) for pid, cpu in b["db"].items()), 1)
    # Everything else the machine did meanwhile (other engineers' tests, say): the noise.
    delta["others"] = round(b["machine"] - a["machine"] - sum(delta.values()), 1)
    return delta


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


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=1):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def ratio(a, b, digits=2):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.{digits}f}"


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


def machine(backends: list[str], args) -> str:
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f"{kb / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = [f"Python {platform.python_version()}"]
    try:
        import django

        versions.append(f"Django {django.get_version()}")
    except ImportError:
        pass
    import sqlite3

    versions.append(f"SQLite {sqlite3.sqlite_version}")
    if "postgres" in backends:
        try:
            versions.append(PostgresStore(args, Path(".")).version())
        except Exception as exc:  # noqa: BLE001
            versions.append(f"PostgreSQL ? ({exc})")
        try:
            import redis

            info = redis.Redis.from_url(args.redis_url, socket_timeout=5).info("server")
            versions.append(f"Redis {info['redis_version']}")
        except Exception:  # noqa: BLE001
            pass
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    return (
        f"{os.cpu_count()} cores ({cpu}), {mem} memory; {', '.join(versions)}; "
        f"load average before the runs {load}"
    )


def write_docs(text: str) -> None:
    block = f"{BEGIN}\n{text}\n{END}"
    if DOCS.exists():
        current = DOCS.read_text()
        if BEGIN in current and END in current:
            head, rest = current.split(BEGIN, 1)
            tail = rest.split(END, 1)[1]
            DOCS.write_text(head + block + tail)
            return
        DOCS.write_text(current.rstrip() + "\n\n" + block + "\n")
        return
    DOCS.write_text(
        "# Benchmarks\n\nSpeed is measured here, never in timed tests: each figure is the median "
        "of several runs.\n\n## Ingest and detection (bench/ingest_detect.py)\n\n" + block + "\n"
    )


def git(*args: str) -> str:
    """Read-only git commands only."""
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()


def code_revision(snapshot: str | None) -> str:
    global TREE
    if snapshot:
        commit = git("rev-parse", "--verify", f"{snapshot}^{{commit}}")
        TREE = Path(tempfile.mkdtemp(prefix="supervisor-bench-tree-"))
        archive = subprocess.Popen(
            ["git", "-C", str(ROOT), "archive", "--format=tar", commit], stdout=subprocess.PIPE
        )
        subprocess.run(
            ["tar", "-x", "-C", str(TREE)], stdin=archive.stdout, check=True, timeout=120
        )
        archive.wait(timeout=60)
        return f"commit {commit[:12]} (a clean `git archive` of it)"
    commit = git("rev-parse", "HEAD")
    changed = git("diff", "--shortstat", "HEAD")
    return f"working tree at {commit[:12]}" + (
        f" with uncommitted changes ({changed})" if changed else ""
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
    if args.snapshot and TREE != ROOT and all(r.ok for r in results):
        shutil.rmtree(TREE, ignore_errors=True)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
