"""The fault suite's own servers: a PostgreSQL cluster made with initdb in a temporary
folder, a redis-server on a free port, and a Supervisor stack (web, workers, beat) run
against them as subprocesses, as `manage.py up` runs them. Nothing here touches the
machine's shared PostgreSQL or Redis, nor pytest-django's test database.

Every process is started in its own process group and killed with SIGKILL to the
group; `leftovers()` names any process of a stopped group still alive.
"""

from __future__ import annotations

import glob
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import suppress
from pathlib import Path

from bench.launch import free_port, group_pids  # the benchmarks start processes the same way
from supervisor.ops.processes import web_command

ROOT = Path(__file__).resolve().parents[3]
PYTHON = sys.executable
# Variables of the caller's environment that would point the stack elsewhere.
FOREIGN = {
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CHANNEL_LAYER_URL",
    "SECRET_KEY",
    "SECRET_KEY_FILE",
    "PORT",
    "CELERY_TASK_ALWAYS_EAGER",
    "DEBUG",
    "CACHE_URL",
}


def clean_env(**settings: str) -> dict[str, str]:
    """The caller's environment less anything that points Supervisor elsewhere, plus
    `settings`."""
    env = {
        k: v for k, v in os.environ.items() if k not in FOREIGN and not k.startswith("SUPERVISOR_")
    }
    return {**env, "DJANGO_SETTINGS_MODULE": "supervisor.settings", **settings}


def manage(env: dict, *args: str, timeout: float = 120) -> str:
    """`manage.py ARGS` in a subprocess with `env`; its output."""
    done = subprocess.run(
        [PYTHON, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {args[0]} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def initdb_path() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    return found[-1] if found else shutil.which("initdb")


def _version(path: str) -> tuple:
    part = path.split("/")[4]
    return tuple(int(p) for p in part.split(".") if p.isdigit())


def missing_tools() -> str | None:
    """Why the fault suite cannot run here, or None."""
    if initdb_path() is None:
        return "initdb (PostgreSQL server binaries) is not installed"
    if shutil.which("redis-server") is None:
        return "redis-server is not installed"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root, and runuser is missing to run PostgreSQL as another user"
    return None


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to the whole group: no shutdown, no acknowledgement, no cleanup."""
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def wait_for(condition, timeout: float = 30, what: str = "the condition", every: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


# --- PostgreSQL --------------------------------------------------------------------------


class Postgres:
    """A throw-away cluster: trust auth, fsync off, 127.0.0.1 on a free port, its unix
    socket in its own folder. Run as the `postgres` user when the tests run as root
    (PostgreSQL refuses to run as root)."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="supervisor-faults-pg-"))
        self.data, self.sockets = self.root / "data", self.root / "sockets"
        self.log = self.root / "postgres.log"
        self.port = free_port()
        self.bin = Path(initdb_path()).parent
        self.sockets.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            shutil.chown(self.sockets, "postgres", "postgres")
        self.pids: set[int] = set()  # every postmaster started, for the leftover check

    def _run(self, *command: str, timeout: float = 60) -> subprocess.CompletedProcess:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        done = subprocess.run(
            [*prefix, *command], capture_output=True, text=True, timeout=timeout, cwd=self.root
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
                f"\n{self.log_tail()}"
            )
        return done

    def init(self) -> None:
        self._run(
            str(self.bin / "initdb"),
            *("-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8"),
            *("--locale", "C", "--no-sync", "--no-instructions"),
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                f"unix_socket_directories = '{self.sockets}'\n"
                "fsync = off\nfull_page_writes = off\n"
                "max_connections = 200\n"
            )

    def start(self) -> None:
        self._run(
            str(self.bin / "pg_ctl"),
            *("-D", str(self.data), "-l", str(self.log), "-w", "-t", "30", "start"),
        )
        self.pids.add(self.pid())

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str, down_for: float) -> float:
        """Stop (`fast`: clients disconnected cleanly; `immediate`: no shutdown, as a
        crash), stay down `down_for` seconds, start; returns how long it was down."""
        started = time.monotonic()
        self.stop(mode)
        time.sleep(down_for)
        self.start()
        return time.monotonic() - started

    def pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def sql(self, database: str, query: str, *params) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True, connect_timeout=5) as conn:
            cursor = conn.execute(query, params or None)
            return cursor.fetchall() if cursor.description else []

    def dump(self, database: str, path: Path) -> None:
        """pg_dump of one database into `path` (plain SQL), for reading after a failure."""
        done = self._run(
            str(self.bin / "pg_dump"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "postgres",
            database,
        )
        path.write_text(done.stdout)

    def log_tail(self, lines: int = 30) -> str:
        with suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def destroy(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with suppress(Exception):
                self.stop("immediate")
        for pid in self.pids:
            if alive(pid):
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)

    def leftovers(self) -> list[str]:
        return [f"postmaster {pid}" for pid in self.pids if alive(pid)]


# --- Redis -------------------------------------------------------------------------------


class Redis:
    """A redis-server on a free port that keeps nothing on disk: a restart loses every
    queued message, as a broker crash would."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="supervisor-faults-redis-"))
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.pids: set[int] = set()

    def start(self) -> None:
        log = (self.root / "redis.log").open("a")
        with log:
            self.proc = subprocess.Popen(
                [
                    shutil.which("redis-server"),
                    *("--port", str(self.port), "--bind", "127.0.0.1"),
                    *("--save", "", "--appendonly", "no", "--dir", str(self.root)),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pids.add(self.proc.pid)
        wait_for(self.ping, timeout=10, what="redis-server to answer")

    def ping(self) -> bool:
        import redis

        try:
            return redis.Redis(port=self.port, socket_timeout=1, socket_connect_timeout=1).ping()
        except redis.RedisError:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}") from None
            return False

    def stop(self) -> None:
        """SIGKILL: no save, no goodbye to the clients."""
        if self.proc is not None:
            kill_group(self.proc)
            self.proc = None

    def restart(self, down_for: float) -> float:
        started = time.monotonic()
        self.stop()
        time.sleep(down_for)
        self.start()
        return time.monotonic() - started

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def flush(self) -> None:
        import redis

        redis.Redis(port=self.port, socket_timeout=5).flushall()

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def leftovers(self) -> list[str]:
        return [f"redis-server {pid}" for pid in self.pids if alive(pid)]


# --- the stack -----------------------------------------------------------------------


class Stack:
    """Supervisor on the fault suite's servers: one database (a copy of the migrated
    template), Redis db 0 as the broker and db 1 as the channel layer, a private var
    folder, a short sweep interval and short leases."""

    def __init__(self, pg: Postgres, redis: Redis, var: Path, template: str, **settings: str):
        self.pg, self.redis, self.var = pg, redis, var
        self.database = f"faults_{uuid.uuid4().hex[:10]}"
        pg.sql("postgres", f'CREATE DATABASE "{self.database}" TEMPLATE "{template}"')
        redis.flush()
        self.env = clean_env(
            PYTHONUNBUFFERED="1",
            SUPERVISOR_VAR_DIR=str(var),
            DATABASE_URL=pg.url(self.database),
            CELERY_BROKER_URL=redis.url(0),
            CHANNEL_LAYER_URL=redis.url(1),
            SUPERVISOR_SWEEP_INTERVAL="0.5",
            SUPERVISOR_ACTION_LEASE="3",
            SUPERVISOR_NOTIFY_LEASE="3",
            SUPERVISOR_ACTION_QUEUE_GRACE="3",
            **settings,
        )
        self.port = free_port()
        self.procs: dict[str, subprocess.Popen] = {}
        self.groups: list[int] = []  # every process group started, dead or alive

    # --- processes ---------------------------------------------------------------------

    def _spawn(self, name: str, command: list[str], env: dict | None = None) -> subprocess.Popen:
        log = (self.var / f"{name}.log").open("ab")
        with log:
            proc = subprocess.Popen(
                command,
                cwd=ROOT,
                env={**self.env, **(env or {})},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc.name, proc.log = name, self.var / f"{name}.log"
        self.procs[name] = proc
        self.groups.append(proc.pid)
        return proc

    def start_web(self, timeout: float = 60) -> subprocess.Popen:
        """The web server, as `manage.py up` starts it; returns once it answers HTTP."""
        name = f"web-{sum(n.startswith('web') for n in self.procs) + 1}"
        proc = self._spawn(name, web_command(PYTHON, "127.0.0.1", self.port))

        def answers() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited:\n{self.tail(name)}")
            try:
                status, _, _ = self.request("GET", "/api/v1/openapi.json", timeout=5)
                return status == 200
            except OSError:
                return False

        wait_for(answers, timeout=timeout, what=f"{name} to answer", every=0.2)
        return proc

    def start_worker(
        self, *extra: str, env: dict | None = None, name: str = "worker", timeout: float = 60
    ) -> subprocess.Popen:
        """A Celery worker, solo pool, in its own process group; returns once ready."""
        name = f"{name}-{sum(n.startswith(name) for n in self.procs) + 1}"
        proc = self._spawn(
            name,
            [
                *(PYTHON, "-m", "celery", "-A", "supervisor", "worker", "--pool", "solo"),
                *("--loglevel", "INFO", "--without-gossip", "--without-mingle"),
                *("--without-heartbeat", "--hostname", f"{name}-{uuid.uuid4().hex[:6]}@%h"),
                *extra,
            ],
            env,
        )

        def ready() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited:\n{self.tail(name)}")
            return b"ready." in proc.log.read_bytes()

        wait_for(ready, timeout=timeout, what=f"{name} to be ready", every=0.2)
        return proc

    def start_beat(self) -> subprocess.Popen:
        schedule = self.var / f"beat-{uuid.uuid4().hex[:6]}"
        return self._spawn(
            "beat",
            [
                *(PYTHON, "-m", "celery", "-A", "supervisor", "beat", "--loglevel", "INFO"),
                *("--schedule", str(schedule)),
            ],
        )

    def kill(self, proc: subprocess.Popen) -> None:
        kill_group(proc)

    def stop(self) -> None:
        for proc in self.procs.values():
            kill_group(proc)

    def leftovers(self) -> list[str]:
        return [f"group {pgid}: {pids}" for pgid in self.groups if (pids := group_pids(pgid))]

    def tail(self, name: str, lines: int = 40) -> str:
        with suppress(OSError, KeyError):
            text = self.procs[name].log.read_text(errors="replace")
            return "\n".join(text.splitlines()[-lines:])
        return ""

    def log_text(self, prefix: str) -> str:
        """Every log of the processes whose name starts with `prefix`, joined."""
        return "\n".join(
            p.log.read_text(errors="replace") for n, p in self.procs.items() if n.startswith(prefix)
        )

    def manage(self, *args: str, timeout: float = 120) -> str:
        return manage(self.env, *args, timeout=timeout)

    def create_source(self, name: str, **connector) -> str:
        """A source with every scope; its token. `connector=..., settings={...}` binds one."""
        args = ["create_source", name, "--scopes", "ingest,read,act"]
        if connector:
            args += ["--connector", connector["connector"]]
            args += ["--connector-settings", json.dumps(connector["settings"])]
        return self.manage(*args).strip().splitlines()[-1]

    # --- what it stores ------------------------------------------------------------------

    def sql(self, query: str, *params) -> list[tuple]:
        return self.pg.sql(self.database, query, *params)

    def open_flags(self) -> set[tuple[str, str, str]]:
        return set(
            self.sql("SELECT subject_type, subject_id, kind FROM core_flag WHERE state = 'open'")
        )

    def flag_rows(self, subject_type: str = "task") -> dict[tuple[str, str], int]:
        """(subject, kind) -> flag rows, whatever their state: each opening is a row."""
        rows = self.sql(
            "SELECT subject_id, kind, count(*) FROM core_flag WHERE subject_type = %s "
            "GROUP BY subject_id, kind",
            subject_type,
        )
        return {(subject, kind): n for subject, kind, n in rows}

    def backlog(self) -> int:
        """Subjects touched by an event since their last evaluation."""
        return sum(
            self.sql(
                f"SELECT count(*) FROM {table} WHERE last_event_at IS NOT NULL AND "
                "(evaluated_at IS NULL OR last_event_at > evaluated_at)"
            )[0][0]
            for table in ("core_task", "core_thread")
        )

    def stored_events(self, source: str) -> tuple[int, int]:
        """(rows, distinct event ids) stored for a source."""
        return self.sql(
            "SELECT count(*), count(DISTINCT e.event_id) FROM core_ingestedevent e "
            "JOIN core_source s ON s.id = e.source_id WHERE s.name = %s",
            source,
        )[0]

    # --- HTTP ----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        token: str | None = None,
        timeout: float = 30,
    ) -> tuple[int, dict, bytes]:
        """(status, headers with lower-case names, body) of one request on a new connection."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return (
                response.status,
                {k.lower(): v for k, v in response.getheaders()},
                response.read(),
            )
        finally:
            conn.close()
