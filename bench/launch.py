"""What the benchmarks share: starting the app's processes as `manage.py up` does, a
fresh store per run (embedded SQLite, or PostgreSQL with Redis as the broker), posting
batches over HTTP, CPU and memory readings from /proc, the machine's description, the
code under test (the working tree or a clean `git archive` of a commit) and writing a
block of docs/benchmarks.md between its markers.

Importing this module re-executes the importing script under the project's `.venv`
when it runs elsewhere (the services and the DB drivers live there).
"""

from __future__ import annotations

import http.client
import json
import os
import platform
import queue
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing, suppress
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_PY = ROOT / ".venv" / "bin" / "python"

# The services and the DB drivers live in the project's environment: run there.
if VENV_PY.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
    os.execv(str(VENV_PY), [str(VENV_PY), *sys.argv])

DOCS = ROOT / "docs" / "benchmarks.md"
TREE = ROOT  # where the services run from: the working tree, or a --snapshot of a commit
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

    def __init__(
        self, env: dict, var: Path, port: int, py_spy: str | None, tree: Path | None = None
    ):
        self.env, self.var, self.port, self.py_spy = env, var, port, py_spy
        self.tree = tree  # None: the module's TREE when started
        self.procs: dict[str, subprocess.Popen] = {}
        self.spies: list[subprocess.Popen] = []

    def commands(self) -> dict[str, list[str]]:
        py = str(VENV_PY)
        return {  # as supervisor/ops/processes.py starts them
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
                    cwd=self.tree or TREE,
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


def manage(
    env: dict, *args: str, timeout: float = 600, tree: Path | None = None
) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(VENV_PY), "manage.py", *args],
        cwd=tree or TREE,
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
    unavailable: int = 0  # 503 answers waited out and re-sent (with `retry_unavailable`)


def ingest(
    port: int,
    token: str,
    bodies: list[bytes],
    sizes: list[int],
    clients: int,
    timeout: float,
    request_timeout: float,
    retry_unavailable: bool = False,
) -> Ingest:
    """POST every body from `clients` keep-alive connections; batches in order, each
    client taking the next one when it is free. With `retry_unavailable`, a 503 is waited
    out (its Retry-After) and the batch re-sent, as a client of the API would."""
    todo: queue.Queue[int] = queue.Queue()
    for i in range(len(bodies)):
        todo.put(i)
    latencies = [0.0] * len(bodies)
    errors: list[str] = []
    retries = [0]
    unavailable = [0]
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
                attempt = 0
                while attempt < 3:
                    try:
                        conn.request("POST", "/api/v1/events", body=bodies[i], headers=headers)
                        resp = conn.getresponse()
                        raw = resp.read()
                        if retry_unavailable and resp.status == 503 and time.monotonic() < deadline:
                            with lock:
                                unavailable[0] += 1
                            time.sleep(float(resp.getheader("Retry-After") or 1))
                            continue
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
                        attempt += 1
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
        unavailable=unavailable[0],
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
                "CACHE_URL",
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
                # The benchmarks measure the pipeline, not the per-token request limit.
                "SUPERVISOR_INGEST_RATE": "0",
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


# --- CPU ------------------------------------------------------------------------------


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


def write_block(
    begin: str, end: str, text: str, heading: str = "", append_heading: bool = True
) -> None:
    """Put `text` between the markers `begin` and `end` of docs/benchmarks.md, leaving the
    rest of the file alone; a missing block is appended (under `heading`, if given and
    `append_heading`; a new file always starts with it)."""
    block = f"{begin}\n{text}\n{end}"
    if DOCS.exists():
        current = DOCS.read_text()
        if begin in current and end in current:
            head, rest = current.split(begin, 1)
            tail = rest.split(end, 1)[1]
            DOCS.write_text(head + block + tail)
            return
        above = heading + "\n\n" if heading and append_heading else ""
        DOCS.write_text(current.rstrip() + "\n\n" + above + block + "\n")
        return
    DOCS.write_text(
        "# Benchmarks\n\nSpeed is measured here, never in timed tests: each figure is the median "
        "of several runs.\n\n" + (heading and heading + "\n\n") + block + "\n"
    )


def git(*args: str) -> str:
    """Read-only git commands only."""
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()


def checkout(snapshot: str | None, untracked: bool = False) -> tuple[Path, str]:
    """Where to run the code under test from, and how to name it: the working tree, or a
    clean `git archive` of `snapshot` in a new temporary directory."""
    if snapshot:
        commit = git("rev-parse", "--verify", f"{snapshot}^{{commit}}")
        tree = Path(tempfile.mkdtemp(prefix="supervisor-bench-tree-"))
        archive = subprocess.Popen(
            ["git", "-C", str(ROOT), "archive", "--format=tar", commit], stdout=subprocess.PIPE
        )
        subprocess.run(
            ["tar", "-x", "-C", str(tree)], stdin=archive.stdout, check=True, timeout=120
        )
        archive.wait(timeout=60)
        return tree, f"commit {commit[:12]} (a clean `git archive` of it)"
    commit = git("rev-parse", "HEAD")
    # With `untracked`, name the application's changes only (supervisor/), new files too.
    changed = git("diff", "--shortstat", "HEAD", *(["--", "supervisor"] if untracked else []))
    new = git("ls-files", "--others", "--exclude-standard", "--", "supervisor") if untracked else ""
    extra = f"; {len(new.splitlines())} new file(s) under supervisor/" if new else ""
    return ROOT, f"working tree at {commit[:12]}" + (
        f" with uncommitted changes ({changed or 'none tracked'}{extra})"
        if changed or extra
        else ""
    )


def code_revision(snapshot: str | None) -> str:
    """`checkout`, and run the services from there (the module's TREE)."""
    global TREE
    TREE, text = checkout(snapshot)
    return text


# --- shared by ingest_copy.py and detect_latency.py ----------------------------------------


def require_services(pg_url: str, redis_url: str) -> None:
    """Exit with a clear message when PostgreSQL or Redis cannot be reached."""
    import psycopg
    import redis

    admin = pg_url.rsplit("/", 1)[0] + "/postgres"
    try:
        with psycopg.connect(admin, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001
        raise SystemExit(f"PostgreSQL is not reachable at {admin}: {exc}") from None
    try:
        redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5).ping()
    except Exception as exc:  # noqa: BLE001
        raise SystemExit(f"Redis is not reachable at {redis_url}: {exc}") from None


def relabel(events: list[dict], tag: str) -> list[dict]:
    """The same events under ids of their own: event ids and every thread, task, run,
    item and wake id (they all start with `thread:` or `node:`) get `tag`, so that
    histories made with different seeds never share an id."""

    def walk(value):
        if isinstance(value, str):
            if value.startswith("thread:"):
                return f"thread:{tag}-{value[7:]}"
            if value.startswith("node:"):
                return f"node:{tag}-{value[5:]}"
            return value
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return [{**e, "id": f"{tag}-{e['id']}", "data": walk(e["data"])} for e in events]


def group_pids(pgid: int) -> list[int]:
    """The live processes of a process group."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def vm_hwm_mb(pid: int) -> float | None:
    """Peak resident set size (VmHWM) of a live process, in MiB."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class PeakRss:
    """Samples VmHWM of every process of each service's group in the background (pool
    processes that end in between keep their last reading)."""

    def __init__(self, services: Services, interval: float = 0.5):
        self.groups = {name: proc.pid for name, proc in services.procs.items()}
        self.interval = interval
        self.peak: dict[str, dict[int, float]] = {name: {} for name in self.groups}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        for name, pgid in self.groups.items():
            for pid in group_pids(pgid):
                mb = vm_hwm_mb(pid)
                if mb is not None:
                    self.peak[name][pid] = max(mb, self.peak[name].get(pid, 0.0))

    def _loop(self) -> None:
        while not self.stopping.wait(self.interval):
            self.sample()

    def __enter__(self):
        self.sample()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(5)
        self.sample()

    def summary(self) -> dict[str, dict]:
        """Per service: the main process's peak, the largest child's, and their sum."""
        out = {}
        for name, pgid in self.groups.items():
            peaks = self.peak[name]
            children = [mb for pid, mb in peaks.items() if pid != pgid]
            out[name] = {
                "main_mb": round(peaks.get(pgid, 0.0), 1),
                "child_max_mb": round(max(children), 1) if children else None,
                "children": len(children),
                "sum_mb": round(sum(peaks.values()), 1),
            }
        return out


def leftovers(services: Services) -> list[str]:
    """Processes of a stopped run's groups still alive (there must be none)."""
    left = []
    for name, proc in services.procs.items():
        pids = group_pids(proc.pid)
        if pids:
            left.append(f"{name}: {len(pids)} process(es) left ({', '.join(map(str, pids))})")
    return left
