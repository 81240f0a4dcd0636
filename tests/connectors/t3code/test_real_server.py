"""The T3 connector against the real T3 Code servers: the kits beside the clone
(`../shared/t3code`, T3 Code 0.0.30, and `../shared/t3code-next`, 0.0.33) build T3 from
source and play the field's failure shapes with a scripted provider; every row is
written by the real server. Each scenario's database is followed from its log and
imported from its projections, and the open flags must be the ones the contract gives
for that shape, with nothing on a healthy task.

In CI these tests run and fail, never skip; elsewhere, without the kits or where they
cannot build (no npm, no C++ toolchain), they skip and say why."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import call_command

from supervisor.connectors.t3code.follower import Follower
from supervisor.connectors.t3code.locate import state_database
from supervisor.connectors.t3code.schema import StateDBError
from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.detection.scenario import _result
from supervisor.core.flags.kinds import CATALOGUE
from supervisor.core.models import DeadLetter, FollowState, IngestedEvent, Run, Thread
from tests.support.t3 import plays
from tests.support.t3.kits import built
from tests.support.t3.plays import EXPECTED, KITS, PLAYS

pytestmark = pytest.mark.real_t3


@pytest.fixture(scope="session")
def scenario_dirs() -> dict[tuple[str, str], Path]:
    """Every scenario of both kits, played once per CI run (tests/support/t3/plays.py)."""
    kits = {version: built(KITS[version]) for version in EXPECTED}
    with plays.held(plays.PLAYING):  # after the background player, if it still plays
        failed = plays.play_all(kits)
    assert not failed, f"kit scenarios failed: {failed}"
    digests = {version: plays.kit_digest(kit) for version, kit in kits.items()}
    return {(v, n): plays.base_dir(v, n, digests) for v, n in PLAYS}


def _follow(source, base: Path, start: str) -> Follower:
    # The install's directory, as an operator may give it: the file is found in it.
    path = state_database(str(base))
    assert path == str(base / "userdata" / "state.sqlite")
    follower = Follower(source, path, start=start, evaluate=False)
    try:
        follower.follow()
    finally:
        follower.close()
    return follower


def _tasks(base: Path) -> dict[str, dict]:
    played = json.loads((base / "scenario.json").read_text())
    return {task["role"]: task for task in played["tasks"]}, played


@pytest.mark.django_db
@pytest.mark.parametrize("start", ["log", "import"])
@pytest.mark.parametrize(("version", "name"), PLAYS, ids=[f"{v}-{n}" for v, n in PLAYS])
def test_a_real_scenario_opens_the_flags_the_contract_gives(scenario_dirs, version, name, start):
    base = scenario_dirs[version, name]
    source, _ = do_create_source("t3-real", scopes="ingest,read")
    _follow(source, base, start)
    state = FollowState.objects.get(source=source)
    # Every real row is mapped or deliberately skipped: none is "not understood".
    assert state.unknown == {}
    assert (state.rows_unknown, state.values_unknown) == (0, 0)
    assert not DeadLetter.objects.exists(), DeadLetter.objects.values_list("error", flat=True)[:3]
    # Judged two hours on, past every grace period.
    at = clock.now() + timedelta(hours=2)
    with clock.virtual_clock(at):
        evaluate(source.namespace_id, at)
    result = _result(name, source.namespace_id)
    tasks, played = _tasks(base)
    wanted = plays.expected(version, name, played)
    assert set(tasks) == set(wanted)
    opened = {role: sorted(result["tasks"][task["taskId"]]["open"]) for role, task in tasks.items()}
    assert opened == wanted
    threads = {
        thread: flags["open"] for thread, flags in result["threads"].items() if flags["open"]
    }
    assert threads == {}


@pytest.mark.django_db
@pytest.mark.parametrize("version", sorted(EXPECTED))
def test_a_real_child_thread_is_linked_to_its_parent(scenario_dirs, version):
    base = scenario_dirs[version, "delegate"]
    source, _ = do_create_source("t3-real", scopes="ingest,read")
    _follow(source, base, "log")
    tasks, played = _tasks(base)
    child = Thread.objects.get(
        namespace=source.namespace, thread_id=tasks["the task"]["childThreadId"]
    )
    assert child.parent_thread_id == played["parentThreadId"]


@pytest.mark.django_db
@pytest.mark.parametrize("start", ["log", "import"])
@pytest.mark.parametrize("version", sorted(EXPECTED))
def test_a_real_failed_run_carries_t3s_error_item(scenario_dirs, version, start):
    base = scenario_dirs[version, "healthy-failure"]
    source, _ = do_create_source("t3-real", scopes="ingest,read")
    _follow(source, base, start)
    tasks, _ = _tasks(base)
    child_run = tasks["the task"]["childRuns"][0]
    run = Run.objects.get(namespace=source.namespace, run_id=child_run["id"])
    assert run.status == "failed"
    assert run.error == child_run["error"]
    assert run.summary == child_run["assistantText"]


@pytest.mark.django_db
@pytest.mark.parametrize("version", sorted(EXPECTED))
def test_real_wakes_are_delivered_when_their_runs_start(scenario_dirs, version):
    """stale-wake has two: the parent's (T3's task wake) and the child's (the
    continuation after its background command)."""
    base = scenario_dirs[version, "stale-wake"]
    source, _ = do_create_source("t3-real", scopes="ingest,read")
    _follow(source, base, "log")
    tasks, played = _tasks(base)
    started = {
        run["id"]: datetime.fromisoformat(run["startedAt"])
        for run in played["parentRuns"] + tasks["the task"]["childRuns"]
    }
    delivered = {
        event.data["run"]: event.at
        for event in IngestedEvent.objects.filter(source=source, type="wake.delivered")
    }
    woken = [played["parentRuns"][1]["id"], tasks["the task"]["childRuns"][1]["id"]]
    assert delivered == {run: started[run] for run in woken}


# Followed live as an install is: imported at the first step (whatever the server has
# written by then), then read from the log while the server writes. A batch boundary
# can fall anywhere, between a roster entry and its command's end, say.
LIVE = {
    ("0.0.33", "stale-wake"): EXPECTED["0.0.33"]["stale-wake"],
    ("0.0.33", "ack-in-run"): EXPECTED["0.0.33"]["ack-in-run"],
    ("0.0.30", "stale-wake"): EXPECTED["0.0.30"]["stale-wake"],
}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("version", "name"), sorted(LIVE), ids=[f"{v}-{n}" for v, n in sorted(LIVE)]
)
def test_a_real_scenario_followed_live_opens_the_same_flags(version, name, tmp_path):
    kit = built(KITS[version])
    base = tmp_path / name
    path = base / "userdata" / "state.sqlite"
    source, _ = do_create_source("t3-live", scopes="ingest,read")
    log = tmp_path / "kit.log"  # a file, not a pipe: the kit's dump would fill one
    playing = subprocess.Popen(
        [str(kit), "scenario", name, "--base-dir", str(base)],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    follower, steps = None, 0
    try:
        deadline = time.monotonic() + 300
        while playing.poll() is None and time.monotonic() < deadline:
            if follower is None and path.is_file():
                follower = Follower(source, str(path), evaluate=False, batch_size=7)
            if follower is not None:
                with contextlib.suppress(StateDBError):  # mid-creation: the next step reads it
                    steps += follower.step().batches
            time.sleep(0.2)
        playing.wait(timeout=60)
    finally:
        if playing.poll() is None:
            playing.kill()
    assert playing.returncode == 0, log.read_text()[-2000:]
    if follower is None:
        follower = Follower(source, str(path), evaluate=False)
    try:
        follower.follow()
    finally:
        follower.close()
    assert steps > 1, "the follower never read the database while the server wrote it"
    state = FollowState.objects.get(source=source)
    assert state.unknown == {}
    at = clock.now() + timedelta(hours=2)
    with clock.virtual_clock(at):
        evaluate(source.namespace_id, at)
    result = _result(name, source.namespace_id)
    tasks, _ = _tasks(base)
    opened = {role: sorted(result["tasks"][task["taskId"]]["open"]) for role, task in tasks.items()}
    assert opened == LIVE[version, name]


def _count(wanted: dict[str, list[str]], kind: str) -> int:
    return sum(kind in kinds for kinds in wanted.values())


@pytest.mark.django_db
@pytest.mark.parametrize(("version", "name"), PLAYS, ids=[f"{v}-{n}" for v, n in PLAYS])
def test_report_t3_counts_what_the_flags_show(scenario_dirs, version, name):
    """`report --t3` on each real database: every gap finalization with its earlier text
    handed (the stale shapes), every undelivered result and every starved delivery that
    the scenario's flags show; nothing on the others."""
    out = io.StringIO()
    at = clock.now() + timedelta(hours=2)  # past every grace period, as the flags above
    with clock.virtual_clock(at):
        call_command("report", "--t3", str(scenario_dirs[version, name]), "--json", stdout=out)
    report = json.loads(out.getvalue())
    wanted = plays.expected(version, name, _tasks(scenario_dirs[version, name])[1])
    assert report["tasks_seen"] == len(wanted)
    stale = _count(wanted, "stale_result")
    assert report["gap_finalizations"]["count"] == stale
    assert report["handed_earlier_text"]["count"] == stale
    assert report["undelivered_result_open"]["count"] == _count(wanted, "undelivered_result")
    assert report["never_delivered_open"]["count"] == _count(wanted, "never_delivered")
    # Every kind that sits on tasks alone, new ones included, as the flags show it.
    for kind, entry in CATALOGUE.items():
        if entry.subjects == {"task"}:
            assert report["open_flags_by_kind"][kind] == _count(wanted, kind), kind
