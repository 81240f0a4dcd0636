"""Backup and restore as docs/operations.md tells it, once end to end: a database filled
through the real code is dumped with `pg_dump -Fc`, restored with `pg_restore` into a
new database, and Supervisor pointed at it (a `manage.py` subprocess) reads the same
rows, flags and task page, and takes new events (sequences restored with the rows).
The SQLite variant copies a live database with SQLite's backup API."""

import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.actions.writers import do_request_action
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.flags.writers import do_acknowledge_flag
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, DeadLetter, Flag, Task
from supervisor.jobs import operator_actions
from supervisor.notify.models import Channel, FlagAlert, Route
from tests.support.receiver import Receiver
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

ROOT = Path(__file__).resolve().parent.parent
STALE = next(p for p in CONTRACT_SCENARIOS if p.name == "seed000-stale-finalize.json")
TASK = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
SECRET = "a-test-secret-of-some-length"

# What a restored Supervisor is asked: rows per table, the flags as the read API lists
# them, the task page's data as the API gives it.
READ = """
import json, os
from urllib.parse import quote
from django.apps import apps
from django.test import Client
client = Client(HTTP_AUTHORIZATION="Bearer " + os.environ["TEST_TOKEN"])
rows = {m._meta.db_table: m.objects.count() for m in apps.get_models()}
flags = client.get("/api/v1/flags?limit=200")
task = client.get("/api/v1/tasks/" + quote(os.environ["TEST_TASK"], safe=""))
print(json.dumps({"rows": rows, "flags": [flags.status_code, flags.json()],
                  "task": [task.status_code, task.json()]}, sort_keys=True))
"""

# New events into the restored database: new rows with new ids, the old ones still
# duplicates, a bad one a dead letter.
INGEST = """
import json, os
from django.db.models import Max
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.flags.writers import do_acknowledge_flag
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Change, DeadLetter, IngestedEvent, Source, Task
from supervisor.core import clock
from tests.support.factories import task_events
from tests.support.scenarios import load_scenario
source = Source.objects.get(name="t3")
before = {m.__name__: m.objects.aggregate(top=Max("pk"))["top"] or 0
          for m in (IngestedEvent, Change, DeadLetter, Task)}
old = apply_events(source, load_scenario(os.environ["TEST_SCENARIO"])["events"])
new = apply_events(source, task_events(1, prefix="after") + [{"id": "bad", "type": "nope"}])
evaluate(source.namespace_id, clock.now())
after = {m.__name__: list(m.objects.filter(pk__gt=before[m.__name__]).values_list("pk", flat=True))
         for m in (IngestedEvent, Change, DeadLetter, Task)}
print(json.dumps({"old": old.as_response(), "new": new.as_response(), "after": after}))
"""


# The SQLite test's filling, in a subprocess: `fill` below with a receiver of its own.
FILL = """
import json
from tests.support.receiver import Receiver
from tests.test_backup_restore import SECRET, fill
with Receiver(secret=SECRET) as receiver:
    token, task = fill(receiver)
print(json.dumps({"token": token, "task": task.task_id}))
"""


def pg_binary(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or [shutil.which(name)]
    if not found[-1]:
        pytest.fail(f"{name} is not installed (looked in /usr/lib/postgresql/*/bin and PATH)")
    return found[-1]


def pg_args() -> list[str]:
    db = connection.settings_dict
    args = ["-h", db["HOST"] or "127.0.0.1", "-U", db["USER"] or "postgres"]
    return args + (["-p", str(db["PORT"])] if db["PORT"] else [])


def url_of(name: str) -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{db['USER']}{password}@{db['HOST']}{port}/{name}?pool=false"


def manage(database_url: str, code: str, tmp_path: Path, **env) -> dict:
    """`manage.py shell -c CODE` against another database; its last line, as JSON."""
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env={
            **os.environ,
            "DATABASE_URL": database_url,
            "SUPERVISOR_VAR_DIR": str(tmp_path / "var"),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def fill(receiver: Receiver) -> tuple[str, Task]:
    """Seed 000 to its end through the real code: its flags opened, alerted, then
    resolved by a delivery by hand (a succeeded action, a manual wake); an orphan wake's
    flag open and acknowledged; a dead letter."""
    source, token = do_create_source("t3", scopes="ingest,read,act")
    source.connector = "webhook"
    source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 2}
    source.save()
    Route.objects.create(
        channel=Channel.objects.create(name="ops", kind="apprise", target="json://127.0.0.1:9/x")
    )
    scenario = load_scenario(STALE)
    apply_events(source, scenario["events"] + [{"id": "broken", "type": "task.nope"}])
    until = datetime.fromisoformat(scenario["until"].replace("Z", "+00:00"))
    evaluate(source.namespace_id, until)
    task = Task.objects.get(task_id=TASK)
    with clock.virtual_clock(until + timedelta(minutes=1)):
        action, _ = do_request_action(task, "deliver", actor="user:op", reason="backup test")
        assert operator_actions.perform(action.pk) == "succeeded"
    orphan = {
        "id": "orphan",
        "type": "wake.queued",
        "at": until.isoformat(),
        "data": {
            "wake": "w:orphan",
            "thread": "thread:parent-release",
            "source": {"kind": "task", "task": "task:never-delegated"},
        },
    }
    apply_events(source, [orphan])
    evaluate(source.namespace_id, until + timedelta(minutes=2))
    do_acknowledge_flag(Flag.objects.get(kind="orphan_wake"), until, actor="user:op")
    assert Flag.objects.filter(state="resolved").count() == 3
    assert FlagAlert.objects.exists() and DeadLetter.objects.exists()
    assert Action.objects.get().state == "succeeded"
    return token, task


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_pg_dump_then_pg_restore_gives_the_same_supervisor_and_it_takes_new_events(tmp_path):
    if connection.vendor != "postgresql":
        pytest.fail("the service run must use PostgreSQL")
    with Receiver(secret=SECRET) as receiver:
        token, task = fill(receiver)
    original = connection.settings_dict["NAME"]
    restored = f"h4_restored_{os.getpid()}"
    dump = tmp_path / "supervisor.dump"
    env = {**os.environ, "PGPASSWORD": connection.settings_dict["PASSWORD"] or ""}

    def run(*command):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{command[0]}: {done.stderr}"
        return done.stdout

    run(pg_binary("pg_dump"), *pg_args(), "-Fc", "-f", str(dump), original)
    run(pg_binary("dropdb"), *pg_args(), "--if-exists", "--force", restored)
    run(pg_binary("createdb"), *pg_args(), restored)
    try:
        run(pg_binary("pg_restore"), *pg_args(), "--no-owner", "-d", restored, str(dump))
        migrated = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--check"],
            cwd=ROOT,
            env={**env, "DATABASE_URL": url_of(restored), "SUPERVISOR_VAR_DIR": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr  # nothing to apply

        read = {"TEST_TOKEN": token, "TEST_TASK": task.task_id}
        before = manage(url_of(original), READ, tmp_path, **read)
        after = manage(url_of(restored), READ, tmp_path, **read)
        assert before["flags"][0] == before["task"][0] == 200
        assert before["rows"]["core_ingestedevent"] > 0 and before["flags"][1]["items"]
        assert before["task"][1]["actions"] and before["task"][1]["reports"]
        assert after == before

        taken = manage(url_of(restored), INGEST, tmp_path, TEST_SCENARIO=str(STALE))
        events = len(load_scenario(STALE)["events"])
        assert taken["old"] == {"accepted": 0, "duplicates": events, "rejected": []}
        assert taken["new"]["accepted"] == 5 and len(taken["new"]["rejected"]) == 1
        # New rows past every restored id: the sequences came back with the rows.
        assert len(taken["after"]["IngestedEvent"]) == 5
        assert len(taken["after"]["DeadLetter"]) == 1
        assert taken["after"]["Task"] and taken["after"]["Change"]
    finally:
        run(pg_binary("dropdb"), *pg_args(), "--if-exists", "--force", restored)


@pytest.mark.slow
def test_the_sqlite_backup_api_copies_a_live_database_that_then_takes_new_events(tmp_path):
    """The embedded database, in both CI runs: made and filled by `manage.py`
    subprocesses (so the PostgreSQL run needs no skip), copied while open."""
    live, copy = tmp_path / "live.sqlite3", tmp_path / "backup.sqlite3"
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": "", "SUPERVISOR_SQLITE_PATH": str(live)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    sqlite = {"SUPERVISOR_SQLITE_PATH": str(live)}
    filled = manage("", FILL, tmp_path, **sqlite)
    # What `sqlite3 supervisor.sqlite3 ".backup backup.sqlite3"` does, while it is open.
    with sqlite3.connect(live) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    read = {"TEST_TOKEN": filled["token"], "TEST_TASK": filled["task"]}

    before = manage("", READ, tmp_path, **read, **sqlite)
    after = manage("", READ, tmp_path, **read, SUPERVISOR_SQLITE_PATH=str(copy))
    assert before["flags"][0] == before["task"][0] == 200
    assert before["rows"]["core_ingestedevent"] > 0 and before["flags"][1]["items"]
    assert before["task"][1]["actions"] and before["task"][1]["reports"]
    assert after == before
    taken = manage("", INGEST, tmp_path, TEST_SCENARIO=str(STALE), SUPERVISOR_SQLITE_PATH=str(copy))
    assert taken["old"]["accepted"] == 0 and taken["new"]["accepted"] == 5
    assert len(taken["after"]["DeadLetter"]) == 1 and taken["after"]["Change"]
    assert len(taken["after"]["IngestedEvent"]) == 5
