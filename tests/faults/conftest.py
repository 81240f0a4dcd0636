"""Fixtures of the fault suite: one PostgreSQL cluster and one redis-server per session
(their own, on free ports), a migrated template database, and per test a stack on a
fresh copy of it. Skipped when initdb or redis-server is missing, unless
SUPERVISOR_REQUIRE_SERVICES is set (then that is a failure)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.faults.services import Postgres, Redis, Stack, clean_env, manage, missing_tools

TEMPLATE = "faults_template"


def pytest_collection_modifyitems(config, items):
    # One worker of a parallel run takes them all: the session's servers are started once.
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.faults)
            item.add_marker(pytest.mark.xdist_group("faults"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def servers():
    reason = missing_tools()
    if reason:
        if os.environ.get("SUPERVISOR_REQUIRE_SERVICES"):
            pytest.fail(f"the fault suite cannot run: {reason}")
        pytest.skip(f"the fault suite needs its own servers: {reason}")
    pg, redis = Postgres(), Redis()
    var = Path(tempfile.mkdtemp(prefix="supervisor-faults-template-"))
    try:
        pg.init()
        pg.start()
        redis.start()
        pg.sql("postgres", f'CREATE DATABASE "{TEMPLATE}"')
        env = clean_env(
            SUPERVISOR_VAR_DIR=str(var),
            DATABASE_URL=pg.url(TEMPLATE) + "?pool=false",
            CELERY_BROKER_URL=redis.url(0),
        )
        manage(env, "migrate", "--noinput", "-v", "0", timeout=300)
        yield pg, redis
    finally:
        pg.destroy()
        redis.destroy()
        shutil.rmtree(var, ignore_errors=True)
        left = pg.leftovers() + redis.leftovers()
        assert not left, f"processes left running after the fault suite: {left}"


@pytest.fixture
def stack(servers, request):
    """A fresh database and var folder; every process it started is killed afterwards,
    and the test fails if any is left. Logs are printed when the test failed."""
    pg, redis = servers
    keep = bool(os.environ.get("SUPERVISOR_FAULTS_KEEP"))
    var = Path(tempfile.mkdtemp(prefix="supervisor-faults-var-"))
    created = None
    try:
        created = Stack(pg, redis, var, TEMPLATE, SUPERVISOR_INGEST_RATE="0")
        yield created
    finally:
        if created is not None:
            created.stop()
            failed = getattr(request.node, "report_call", None)
            if failed is not None and failed.failed:
                for name in created.procs:
                    print(f"--- {name} (last lines) ---\n{created.tail(name, 60)}")
            left = created.leftovers()
            # Back up, whatever the test did to it, so the next test has its cluster.
            if not (pg.data / "postmaster.pid").exists():
                pg.start()
            if not redis.proc:
                redis.start()
            if keep:  # to read after a failure: the logs, and a dump of the database
                dump = var / "database.sql"
                pg.dump(created.database, dump)
                print(f"kept {var} (logs, {dump.name})")
            pg.sql("postgres", f'DROP DATABASE IF EXISTS "{created.database}" WITH (FORCE)')
        if not keep:
            shutil.rmtree(var, ignore_errors=True)
        assert not (created and left), f"processes left running: {left}"


@pytest.fixture
def figures(request):
    """What a test measured: printed (pytest -rP shows it) and appended as one JSON line
    to $SUPERVISOR_FAULT_FIGURES when set, for docs/reliability.md."""
    found: dict = {}
    started = time.monotonic()
    yield found
    found["seconds"] = round(time.monotonic() - started, 1)
    line = json.dumps({"test": request.node.name, **found}, sort_keys=False)
    print(f"FIGURES {line}")
    path = os.environ.get("SUPERVISOR_FAULT_FIGURES")
    if path:
        with open(path, "a") as out:
            out.write(line + "\n")
