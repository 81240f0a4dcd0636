"""Real Celery workers for tests, on the configured broker and the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

from supervisor.celery import app

ROOT = Path(__file__).resolve().parents[2]


def test_database_env() -> dict[str, str]:
    """Environment that points a child process at the database the tests use."""
    db = connection.settings_dict
    env = {"SUPERVISOR_VAR_DIR": str(settings.VAR_DIR)}
    if connection.vendor == "sqlite":
        env["SUPERVISOR_SQLITE_PATH"] = str(db["NAME"])
    else:
        auth = quote(db["USER"] or "") + (f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else "")
        env["DATABASE_URL"] = (
            f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
        )
    return env


def purge_broker() -> None:
    with app.connection_for_write() as conn:
        app.control.purge(connection=conn)


@contextmanager
def celery_worker(*extra: str, env: dict | None = None, timeout: float = 60):
    """A worker in its own process group (solo pool: SIGKILL ends all of it)."""
    log = Path(settings.VAR_DIR) / f"worker-{uuid.uuid4().hex[:8]}.log"
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "supervisor",
        "worker",
        "--pool",
        "solo",
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--hostname",
        f"test-{uuid.uuid4().hex[:8]}@%h",
        *extra,
    ]
    child_env = {**os.environ, **test_database_env(), **(env or {})}
    with log.open("w") as out:
        worker = subprocess.Popen(
            command,
            cwd=ROOT,
            env=child_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + timeout
        while "ready." not in log.read_text():
            if worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start:\n{log.read_text()}")
            time.sleep(0.1)
        worker.log = log
        yield worker
    finally:
        stop(worker)


def stop(worker: subprocess.Popen, sig=signal.SIGTERM) -> None:
    if worker.poll() is None:
        os.killpg(worker.pid, sig)
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()


def wait_for(condition, timeout: float = 30, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
