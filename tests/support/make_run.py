"""`make run` as a newcomer runs it, for tests: its own processes, a fresh var folder, a
free port, and Ctrl-C (SIGINT to its process group) at the end.

On the embedded defaults it gets SQLite and the filesystem broker under its var folder;
when the tests run against PostgreSQL and Redis, it gets a database of its own and
Redis databases no test uses, so nothing it does touches the tests' data.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from tests.support.parallel import WORKER, redis_db, with_db

ROOT = Path(__file__).resolve().parents[2]
PASSWORD_LINE = re.compile(r"user 'admin' \(admin role\), password '([^']+)'")
# Its own database and Redis databases, one set per test worker (tests/support/parallel.py).
DATABASE = "supervisor_make_run" + (f"_{WORKER}" if WORKER else "")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class MakeRun:
    process: subprocess.Popen
    url: str
    var_dir: Path
    log: Path
    password: str | None = None
    seen: dict[int, str] = field(default_factory=dict)  # pid -> command line, while up

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def processes(self) -> dict[int, str]:
        """Every live process started for this run: found by the var folder in their
        environment, so grandchildren (Celery's pool, the simulator) count too."""
        marker = f"SUPERVISOR_VAR_DIR={self.var_dir}".encode()
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if marker not in (entry / "environ").read_bytes().split(b"\0"):
                    continue
                if (entry / "stat").read_text().split(") ", 1)[1].startswith("Z"):
                    continue  # a zombie has ended; its parent just has not reaped it yet
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
            found[int(entry.name)] = command.strip()
        return found

    def wait_for_output(self, needle: str, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while needle not in (text := self.output()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"`make run` never printed {needle!r}:\n{text[-6000:]}")
            time.sleep(0.2)
        return text

    def answers_now(self) -> bool:
        """Whether the web server answers one request, without waiting for it."""
        try:
            with urllib.request.urlopen(f"{self.url}/login/", timeout=5) as answer:
                return answer.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def wait_until_serving(self, timeout: float = 120) -> None:
        text = self.wait_for_output("Supervisor is up", timeout)
        found = PASSWORD_LINE.search(text)
        self.password = found.group(1) if found else self.password
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/login/", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"nothing answers at {self.url}:\n{self.output()[-6000:]}")
            time.sleep(0.2)

    def ctrl_c(self, timeout: float = 60) -> int:
        """SIGINT to the process group, as the terminal sends it; `make`'s exit code."""
        self.seen |= self.processes()
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"`make run` did not stop:\n{self.output()[-6000:]}") from None

    def kill_leftovers(self) -> None:
        for pid in self.processes():
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def service_env(database: str) -> dict[str, str]:
    """The PostgreSQL and Redis settings for a run beside the tests', or {} when the
    tests run on the embedded defaults."""
    env = {}
    url = os.environ.get("DATABASE_URL")
    if url:
        env["DATABASE_URL"] = urlunsplit(urlsplit(url)._replace(path=f"/{database}"))
    for name, role in (("CELERY_BROKER_URL", "run broker"), ("CHANNEL_LAYER_URL", "run channel")):
        value = os.environ.get(name, "")
        if value.startswith("redis://"):
            env[name] = with_db(value, redis_db(role))
    return env


def _recreate_database(url: str, drop_only: bool = False) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres", scheme="postgresql"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop_only:
            conn.execute(f'CREATE DATABASE "{name}"')


def _flush_redis(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


@contextmanager
def make_run(
    var_dir: Path,
    *,
    seed: int | None = None,
    extra_env: dict | None = None,
    again: bool = False,
    keep: bool = False,
):
    """`make run` on a var folder and a free port; stopped with Ctrl-C (and anything
    left killed) when the block ends. A fresh store unless `again` (the one a run with
    `keep` left: its var folder, and on PostgreSQL its database)."""
    var_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    services = service_env(DATABASE)
    if not again:
        if "DATABASE_URL" in services:
            _recreate_database(services["DATABASE_URL"])
        for name in ("CELERY_BROKER_URL", "CHANNEL_LAYER_URL"):
            if name in services:
                _flush_redis(services[name])
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL")
        and not key.startswith(("MAKE", "PYTEST_", "DJANGO_"))
    }
    env |= services | {
        "SUPERVISOR_VAR_DIR": str(var_dir),
        "PORT": str(port),
        "PYTHONUNBUFFERED": "1",
        **({"SUPERVISOR_DEMO_SEED": str(seed)} if seed is not None else {}),
        **(extra_env or {}),
    }
    log = var_dir / "make-run.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            ["make", "--no-print-directory", "run"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    run = MakeRun(process, f"http://127.0.0.1:{port}", var_dir, log)
    try:
        yield run
    finally:
        if process.poll() is None:
            try:
                run.ctrl_c()
            except AssertionError:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        run.kill_leftovers()
        if "DATABASE_URL" in services and not keep:
            _recreate_database(services["DATABASE_URL"], drop_only=True)
