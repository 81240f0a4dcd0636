"""The suite on every core: a pytest plugin (`-p tests.support.parallel` in pyproject.toml)
that keeps each pytest-xdist worker apart from the others, loaded before Django's
settings are read (pytest-django reads them before any conftest).

Each worker gets its own var folder (SQLite files, the filesystem broker, keys, logs):
`SUPERVISOR_VAR_DIR/<worker>`; pytest-django gives each its own test database and
pytest-xdist its own temporary folders; servers the tests start take free ports. Against
Redis (CI's service run), each worker gets Redis databases of its own for the broker,
the channel layer and the cache, and two more for a `make run` beside the tests
(tests/support/make_run.py): five a worker, of Redis's sixteen, so at most three workers
there (REDIS_WORKERS), whatever the cores."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1"…; "" without xdist
INDEX = int(WORKER[2:]) if WORKER.startswith("gw") else 0

# The databases of the first worker (and of a run without xdist): what the URLs name,
# and two for `make run`. The others take theirs from SPARE, five each; database 0 is
# left alone (a developer's own Redis may hold something there).
RUN_BROKER_DB, RUN_CHANNEL_DB = 13, 12
SPARE = (1, 2, 3, 4, 5, 6, 7, 9, 10, 11)
ROLES = ("CELERY_BROKER_URL", "CHANNEL_LAYER_URL", "CACHE_URL", "run broker", "run channel")
REDIS_WORKERS = 1 + len(SPARE) // len(ROLES)


def _services() -> bool:
    return bool(os.environ.get("DATABASE_URL") and os.environ.get("CELERY_BROKER_URL"))


def redis_db(role: str, index: int = INDEX, environ=os.environ) -> int | None:
    """Worker `index`'s Redis database for a role of ROLES; for the three URLs, None
    when that URL does not name Redis."""
    if role in ROLES[:3]:
        url = environ.get(role, "")
        if not url.startswith("redis://"):
            return None
        if index == 0:
            path = urlsplit(url).path.strip("/")
            return int(path) if path.isdigit() else 0
    elif index == 0:
        return RUN_BROKER_DB if role == "run broker" else RUN_CHANNEL_DB
    if index >= REDIS_WORKERS:
        raise RuntimeError(
            f"worker gw{index}: Redis has databases for {REDIS_WORKERS} workers of the "
            "service run (five each); run it with fewer (-n)"
        )
    return SPARE[(index - 1) * len(ROLES) + ROLES.index(role)]


def with_db(url: str, db: int) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{db}"))


def _isolate() -> None:
    if not WORKER:
        return
    base = Path(os.environ.get("SUPERVISOR_VAR_DIR") or Path(__file__).parents[2] / "var")
    os.environ["SUPERVISOR_VAR_DIR"] = str(base / WORKER)
    for role in ROLES[:3]:
        url = os.environ.get(role, "")
        if url.startswith("redis://"):
            os.environ[role] = with_db(url, redis_db(role))


_isolate()


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker a core, but no more than Redis has databases for."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = cores or 1
    if _services() and os.environ.get("CELERY_BROKER_URL", "").startswith("redis://"):
        return min(cores, REDIS_WORKERS)
    return cores
