"""The T3 Code follower: T3's state database, written as T3 would, read into contract
events that open the same flags as the contract scenarios tell."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from supervisor.connectors.t3code.follower import Follower
from supervisor.connectors.t3code.mapping import Mapper, event_id
from supervisor.connectors.t3code.schema import Busy, StateDB, StateDBError
from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.detection.scenario import Scenario, _result, differences
from supervisor.core.models import DeadLetter, FollowState, IngestedEvent, Source, Task
from supervisor.jobs import follow_t3 as t3_tasks
from tests.support.t3.statedb import FakeT3
from tests.support.t3.timelines import TIMELINES, renamed, user_run

pytestmark = pytest.mark.django_db

NAMES = sorted(TIMELINES)


@pytest.fixture
def t3_source(db):
    source, _ = do_create_source("t3-origin", scopes="ingest,read")
    return source


@pytest.fixture
def state_path(tmp_path):
    return tmp_path / "statev2.sqlite"


def follower(source, path, **options) -> Follower:
    options.setdefault("evaluate", False)
    return Follower(source, str(path), **options)


def written(path, name, *, after_write=None) -> FakeT3:
    t3 = FakeT3(path)
    t3.after_write = after_write
    TIMELINES[name].write(t3)
    return t3


def open_flag_differences(source: Source, name: str, *, alone: bool = True) -> list[str]:
    """Where the open flags at the scenario's `until` differ from its `expect_open`; with
    `alone`, a subject the scenario does not name must have none either."""
    scenario = Scenario.load(TIMELINES[name].scenario)
    with clock.virtual_clock(scenario.until):
        evaluate(source.namespace_id, scenario.until)
    result = _result(scenario.name, source.namespace_id)
    if not alone:
        for group in ("tasks", "threads"):
            named = scenario.expect_open[group]
            result[group] = {k: v for k, v in result[group].items() if k in named}
    return differences(dataclasses.replace(scenario, expect=None), result)


def assert_no_doubles(source: Source) -> None:
    ids = list(IngestedEvent.objects.filter(source=source).values_list("event_id", flat=True))
    assert len(ids) == len(set(ids))
    assert not DeadLetter.objects.exists(), DeadLetter.objects.values_list("error", flat=True)[:3]


# --- the scenarios, from T3's rows ---------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_a_timeline_followed_from_the_log_opens_the_scenarios_flags(t3_source, state_path, name):
    written(state_path, name).close()
    progress = follower(t3_source, state_path, start="log").follow()
    assert progress.rows > 0 and progress.rejected == 0
    assert open_flag_differences(t3_source, name) == []
    assert_no_doubles(t3_source)


@pytest.mark.parametrize("name", NAMES)
def test_rows_appended_while_following_open_the_same_flags(t3_source, state_path, name):
    FakeT3(state_path).close()
    reader = follower(t3_source, state_path)
    reader.follow()  # the first run: an empty file imported
    steps = []
    written(state_path, name, after_write=lambda: steps.append(reader.follow()))
    assert sum(step.rows for step in steps) > 30
    assert sum(step.duplicates for step in steps) == 0
    assert open_flag_differences(t3_source, name) == []
    assert_no_doubles(t3_source)


@pytest.mark.parametrize("name", NAMES)
def test_a_follower_restarted_after_every_batch_loses_and_doubles_nothing(
    t3_source, state_path, name
):
    written(state_path, name).close()
    batches = 0
    while True:
        # A new follower each time: its cursor and memory come from the database.
        progress = follower(t3_source, state_path, start="log", batch_size=3).step()
        if progress.rows == 0:
            break
        batches += 1
        assert progress.duplicates == 0
    assert batches > 10
    assert open_flag_differences(t3_source, name) == []
    assert_no_doubles(t3_source)


@pytest.mark.parametrize("name", NAMES)
def test_restarts_while_rows_are_appended(t3_source, state_path, name):
    FakeT3(state_path).close()
    follower(t3_source, state_path).step()
    totals = {"duplicates": 0, "writes": 0}

    def restart_now_and_then():
        totals["writes"] += 1
        if totals["writes"] % 3 == 0:
            progress = follower(t3_source, state_path, batch_size=2).follow()
            totals["duplicates"] += progress.duplicates

    written(state_path, name, after_write=restart_now_and_then).close()
    follower(t3_source, state_path).follow()
    assert totals["duplicates"] == 0
    assert open_flag_differences(t3_source, name) == []
    assert_no_doubles(t3_source)


def test_a_crash_inside_a_batch_stores_nothing_and_the_batch_is_read_again(
    t3_source, state_path, monkeypatch
):
    written(state_path, "seed000").close()
    reader = follower(t3_source, state_path, start="log", batch_size=20)
    reader.step()
    before = (IngestedEvent.objects.count(), FollowState.objects.get().position)

    import supervisor.connectors.t3code.follower as module

    def crash(*args, **kwargs):
        raise RuntimeError("killed between the events and the cursor")

    real = module.FollowState.save
    monkeypatch.setattr(module.FollowState, "save", crash)
    with pytest.raises(RuntimeError):
        reader.step()
    assert (IngestedEvent.objects.count(), FollowState.objects.get().position) == before
    monkeypatch.setattr(module.FollowState, "save", real)
    reader.follow()
    assert open_flag_differences(t3_source, "seed000") == []
    assert_no_doubles(t3_source)


def test_an_import_is_stored_in_chunks_and_one_cut_short_is_done_again(
    t3_source, state_path, monkeypatch
):
    import supervisor.connectors.t3code.follower as module

    written(state_path, "seed000").close()
    monkeypatch.setattr(module, "IMPORT_CHUNK", 10)
    real, calls = module.apply_events, []

    def killed_after_two_chunks(source, events):
        calls.append(len(events))
        if len(calls) == 3:
            raise RuntimeError("killed in the middle of an import")
        return real(source, events)

    monkeypatch.setattr(module, "apply_events", killed_after_two_chunks)
    with pytest.raises(RuntimeError):
        follower(t3_source, state_path).step()
    assert IngestedEvent.objects.count() == 20  # two chunks, each committed
    assert FollowState.objects.get().imports == 0  # the cursor did not move
    monkeypatch.setattr(module, "apply_events", real)
    progress = follower(t3_source, state_path).follow()
    assert progress.imported > 20 and progress.duplicates == 20
    assert open_flag_differences(t3_source, "seed000") == []
    assert_no_doubles(t3_source)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("split", [0.4, 0.75, 1.0])
def test_importing_the_projections_then_following_opens_the_same_flags(
    t3_source, state_path, name, split
):
    total = _count_writes(state_path.with_name("count.sqlite"), name)
    cut = int(total * split)
    state = {"imported": False, "writes": 0}
    reader = follower(t3_source, state_path)

    def import_at_the_cut():
        state["writes"] += 1
        if not state["imported"] and state["writes"] >= cut:
            progress = reader.follow()  # the first run: the projections so far
            assert progress.imported > 0
            state["imported"] = True

    written(state_path, name, after_write=import_at_the_cut).close()
    reader.follow()
    assert state["imported"]
    assert FollowState.objects.get().imports == 1
    assert open_flag_differences(t3_source, name) == []
    assert_no_doubles(t3_source)


def _count_writes(path, name) -> int:
    t3 = written(path, name)
    t3.close()
    return t3.writes


@pytest.mark.parametrize("name", NAMES)
def test_import_and_log_tell_the_same_facts_with_the_same_ids(t3_source, state_path, name):
    """The import's events are facts the log tells too: same ids, so a re-import is
    duplicates. (The log tells more: statuses passed through, items that came and went.)"""
    written(state_path, name).close()
    db = StateDB(str(state_path))
    from_log = Mapper(lookup=db).map_rows(db.rows_after(0, 10_000))
    imported = follower(t3_source, state_path)._import(db, Mapper(lookup=db))[1]
    by_id = {event["id"]: event for event in from_log}
    same = [event for event in imported if event["id"] in by_id]
    # Every run, task, thread and task wake the import tells, the log tells alike.
    for event in imported:
        if event["type"] in ("run.requested", "run.finished", "task.delegated", "thread.seen"):
            assert event["id"] in by_id, event
            assert event["data"] == by_id[event["id"]]["data"], event
    assert len(same) >= 0.7 * len(imported)


def test_following_twice_the_same_rows_gives_duplicates_not_doubles(t3_source, state_path):
    written(state_path, "seed000").close()
    follower(t3_source, state_path, start="log").follow()
    count = IngestedEvent.objects.count()
    # A second source's follower state, same source: read everything again.
    FollowState.objects.all().delete()
    again = follower(t3_source, state_path, start="log").follow()
    assert again.accepted == 0 and again.duplicates == again.events > 0
    assert IngestedEvent.objects.count() == count


# --- what the mapping says ------------------------------------------------------------


def test_the_mapping_names_runs_items_wakes_and_deliveries(t3_source, state_path):
    written(state_path, "seed000").close()
    db = StateDB(str(state_path))
    events = Mapper(lookup=db).map_rows(db.rows_after(0, 10_000))
    by_type: dict[str, list] = {}
    for event in events:
        by_type.setdefault(event["type"], []).append(event["data"])
    child = "thread:delegated-task:retry-port"
    task = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
    triggers = {d["run"]: d["trigger"] for d in by_type["run.requested"] if d["thread"] == child}
    run = f"run:thread:{child}:ordinal:"
    assert triggers[run + "1"] == {"kind": "delegation", "task": task}
    assert triggers[run + "2"] == {"kind": "wake", "wake": "msg-retry-port-notice-1"}
    assert triggers[run + "3"] == {"kind": "wake", "wake": "msg-retry-port-notice-3"}
    [item] = [d for d in by_type["background.started"] if d["thread"] == child]
    assert item == {
        "thread": child,
        "item": f"{child}:bg:bsuite01",
        "kind": "command",
        "run": run + "1",
        "label": "pytest -q tests/ (long)",
    }
    wakes = {d["wake"]: d for d in by_type["wake.queued"]}
    # The command's notice names no item: matched to the entry that left before it.
    assert wakes["msg-retry-port-notice-1"]["source"] == {
        "kind": "background",
        "item": f"{child}:bg:bsuite01",
    }
    # The parent's notice carries the text handed, not the headline.
    assert wakes["msg-release-notice-1"]["summary"] == "Still running, waiting on the checks."
    assert wakes["msg-release-notice-1"]["source"] == {
        "kind": "task",
        "task": task,
        "thread": child,
    }
    delivered = {d["wake"]: d.get("run") for d in by_type["wake.delivered"]}
    assert delivered["msg-release-notice-1"] == "run:thread:thread:parent-release:ordinal:2"
    reports = [d for d in by_type["task.reported"] if d["task"] == task]
    # pending and running are both "running"; the transfer adds the result run.
    assert [r["status"] for r in reports] == ["running", "waiting", "completed", "completed"]
    assert reports[-1]["result_run"] == run + "1"
    finished = {d["run"]: d for d in by_type["run.finished"]}
    assert finished[run + "4"]["summary"].startswith("All checks green")
    delegated = [d for d in by_type["task.delegated"] if d["task"] == task]
    assert delegated[0]["parent_run"] == "run:thread:thread:parent-release:ordinal:1"
    assert "requested_at" not in delegated[0]  # T3 does not store it


def test_a_wait_tasks_transfer_is_its_delivery(t3_source, state_path):
    written(state_path, "seed002").close()
    db = StateDB(str(state_path))
    events = Mapper(lookup=db).map_rows(db.rows_after(0, 10_000))
    wakes = {e["data"]["wake"]: e for e in events if e["type"] == "wake.queued"}
    delivered = {e["data"]["wake"]: e for e in events if e["type"] == "wake.delivered"}
    wake = wakes["ctx:a1:1"]["data"]
    assert wake["source"]["task"] == "node:delegated-task:cmd%3Aa1"
    assert wake["summary"].startswith("Failed to authenticate")
    assert delivered["ctx:a1:1"]["data"]["run"] == "run:thread:thread:smart-loop:ordinal:1"
    assert delivered["ctx:a1:1"]["at"] == wakes["ctx:a1:1"]["at"]
    # The orphan's notice: its task is unknown, the text comes from the notice's detail.
    orphan = wakes["msg-loop-notice-other"]["data"]
    assert orphan["source"]["task"] == "node:delegated-task:other-id"
    assert orphan["summary"].startswith("Reviewed and fixed")
    # The message run of the first child belongs to no task.
    [trigger] = [
        e["data"]["trigger"]
        for e in events
        if e["type"] == "run.requested"
        and e["data"]["run"] == "run:thread:thread:delegated-task:a1:ordinal:2"
    ]
    assert trigger == {"kind": "message"}


def test_a_run_started_by_supervisors_continue_names_its_manual_wake(t3_source, state_path):
    """The connector sends a continue with its manual wake as the message id;
    the run T3 starts for it names that wake, so the task owns it (contract §4, rule 5),
    and a message typed in T3 by hand stays a follow-up."""
    child, task = "thread:delegated-task:a1", "node:delegated-task:cmd%3Aa1"
    wake = "supervisor:continue:op-continue-1"
    t3 = written(state_path, "seed002")
    user_run(
        t3,
        child,
        3,
        wake,
        text="Go on from where you stopped.",
        createdBy="user",
        creationSource="server",
        at_message="2026-11-13T11:30:00.000Z",
        at_run="2026-11-13T11:30:00.010Z",
        at_start="2026-11-13T11:30:00.050Z",
    )
    t3.close()
    db = StateDB(str(state_path))
    events = Mapper(lookup=db).map_rows(db.rows_after(0, 10_000))
    triggers = {
        e["data"]["run"]: e["data"]["trigger"] for e in events if e["type"] == "run.requested"
    }
    assert triggers[f"run:thread:{child}:ordinal:3"] == {"kind": "wake", "wake": wake}
    assert triggers[f"run:thread:{child}:ordinal:2"] == {"kind": "message"}
    [queued] = [
        e["data"] for e in events if e["type"] == "wake.queued" and e["data"]["wake"] == wake
    ]
    assert queued["source"] == {"kind": "manual", "task": task}
    assert (queued["thread"], queued["summary"]) == (child, "Go on from where you stopped.")


def test_native_subagents_are_background_items_and_steered_notices_are_delivered(
    t3_source, state_path
):
    written(state_path, "healthy").close()
    follower(t3_source, state_path, start="log").follow()
    from supervisor.core.models import BackgroundItem, Wake

    native = BackgroundItem.objects.get(item_id="node:native:reader-1")
    assert (native.kind, native.run_id, native.finish_status) == (
        "subagent",
        "run:thread:thread:ci-watch:ordinal:1",
        "completed",
    )
    notice = Wake.objects.get(wake_id="msg-ci-native-notice")
    assert notice.source_item == "node:native:reader-1"
    assert notice.delivered_run == "run:thread:thread:ci-watch:ordinal:1"
    steered = Wake.objects.get(wake_id="msg-lead-notice")
    assert steered.delivered_run == "run:thread:thread:lead:ordinal:1"
    assert steered.summary == "CI green, PR #77 ready to merge."


def test_a_notice_whose_entry_left_before_an_import_stands_as_an_item_of_its_own(
    t3_source, state_path
):
    written(state_path, "seed001").close()
    follower(t3_source, state_path).follow()  # everything from the projections
    from supervisor.core.models import BackgroundItem, Wake

    wake = Wake.objects.get(wake_id="msg-remote-monitor")
    item = BackgroundItem.objects.get(item_id=wake.source_item)
    assert item.kind == "monitor" and item.run_id is None  # the contract's default run
    assert open_flag_differences(t3_source, "seed001") == []


def test_ids_are_stable_and_short():
    assert event_id("run.requested", "run:1") == event_id("run.requested", "run:1")
    assert event_id("run.requested", "run:1") != event_id("run.started", "run:1")
    assert len(event_id("task.reported", "x" * 500, "completed", "2026")) < 60


# --- what it tolerates ------------------------------------------------------------------


def test_unknown_types_values_and_columns_are_counted_and_skipped(t3_source, state_path):
    t3 = FakeT3(state_path)
    t3.add_column("orchestration_events", "mood")
    t3.add_column("orchestration_v2_projection_runs", "colour")
    TIMELINES["healthy"].write(t3)
    t3.unknown_event(at="2026-11-10T09:00:00.000Z", thread="thread:lead", event_type="teleport")
    run = t3.run("thread:lead", 9, at="2026-11-10T09:00:01.000Z")
    t3.update_run(run, at="2026-11-10T09:00:02.000Z", status="hibernating")
    t3.subagent(
        "node:odd",
        at="2026-11-10T09:00:03.000Z",
        thread="thread:lead",
        run=run,
        origin="alien",
        title="?",
    )
    t3.roster(
        "thread:lead", [{"taskId": "b1", "kind": "daemon"}], at="2026-11-10T09:00:04.000Z", run=run
    )
    t3.message(
        "msg-odd",
        at="2026-11-10T09:00:05.000Z",
        thread="thread:lead",
        role="user",
        notification={"source": {"kind": "telepathy"}, "outcome": "exploded", "summary": "?"},
    )
    t3.other_aggregate(at="2026-11-10T09:00:06.000Z")
    t3.close()
    progress = follower(t3_source, state_path, start="log").follow()
    state = FollowState.objects.get()
    assert progress.rejected == 0
    assert state.rows_unknown == 2  # one unknown type in the healthy timeline, one here
    assert state.values_unknown >= 3
    for name in (
        "event_type:teleport",
        "run.status:hibernating",
        "subagent.origin:alien",
        "pendingBackgroundTasks.kind:daemon",
        "notification.source.kind:telepathy",
        "column:orchestration_events.mood",
        "column:orchestration_v2_projection_runs.colour",
    ):
        assert name in state.unknown, name
    assert state.rows_skipped == 2  # a version 1 row, another aggregate
    assert open_flag_differences(t3_source, "healthy") == []


def test_version_1_rows_gaps_and_the_legacy_copy_are_passed_over(t3_source, state_path):
    t3 = FakeT3(state_path, legacy_copy=True)
    TIMELINES["seed000"].write(t3)
    t3.close()
    with sqlite3.connect(state_path) as conn:
        sequences = [s for (s,) in conn.execute("SELECT sequence FROM orchestration_events")]
        copies = conn.execute("SELECT COUNT(*) FROM orchestration_v2_events").fetchone()[0]
    assert sequences[-1] > len(sequences) and copies == len(sequences)
    follower(t3_source, state_path, start="log").follow()
    state = FollowState.objects.get()
    assert state.position == sequences[-1] and state.rows_read == len(sequences)
    assert_no_doubles(t3_source)
    assert open_flag_differences(t3_source, "seed000") == []


def test_a_locked_database_is_retried_with_backoff(t3_source, tmp_path):
    path = tmp_path / "journal.sqlite"
    t3 = FakeT3(path, wal=False)  # in rollback-journal mode a writer's lock stops readers
    TIMELINES["healthy"].write(t3)
    t3.close()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    releaser = threading.Timer(0.6, lambda: holder.execute("COMMIT"))
    releaser.start()
    try:
        reader = follower(t3_source, path, start="log")
        progress = reader.follow()
    finally:
        releaser.join()
        holder.close()
    assert progress.rows > 0
    assert reader.db.retries >= 1
    assert open_flag_differences(t3_source, "healthy") == []


def test_a_database_locked_past_the_retries_raises_busy_and_stores_nothing(t3_source, tmp_path):
    path = tmp_path / "journal.sqlite"
    t3 = FakeT3(path, wal=False)
    TIMELINES["healthy"].write(t3)
    t3.close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        db = StateDB(str(path), busy_timeout=0.05, retry_for=0.3)
        with pytest.raises(Busy):
            follower(t3_source, path, start="log", db=db).step()
    finally:
        holder.close()
    assert IngestedEvent.objects.count() == 0
    assert FollowState.objects.get().position == 0


def test_a_replaced_file_is_imported_afresh(t3_source, state_path, tmp_path):
    written(state_path, "seed000").close()
    reader = follower(t3_source, state_path, start="log")
    reader.follow()
    position = FollowState.objects.get().position
    # Another T3 file moved into place (a restore): another inode, another log.
    other = tmp_path / "other.sqlite"
    written(other, "healthy").close()
    os.replace(other, state_path)
    for suffix in ("-wal", "-shm"):
        Path(f"{state_path}{suffix}").unlink(missing_ok=True)
    progress = reader.follow()
    state = FollowState.objects.get()
    assert progress.replaced and state.imports == 1 and state.position != position
    assert Task.objects.filter(task_id="task:ci-watch", known=True).exists()
    assert open_flag_differences(t3_source, "healthy", alone=False) == []
    # What was read from the old file stays.
    assert open_flag_differences(t3_source, "seed000", alone=False) == []


def test_a_log_that_went_backwards_is_a_replacement(t3_source, state_path, tmp_path):
    backup = tmp_path / "backup.sqlite"
    t3 = FakeT3(state_path)
    TIMELINES["healthy"].write(t3)
    t3.close()
    shutil.copy(state_path, backup)
    t3 = FakeT3(state_path)
    t3.entities = {}
    t3.legacy_v1(at="2026-11-10T09:00:00.000Z")
    t3.legacy_v1(at="2026-11-10T09:00:01.000Z")
    t3.close()
    reader = follower(t3_source, state_path, start="log")
    reader.follow()
    reader.close()
    # The backup copied over the file in place: same inode, same first row, fewer rows.
    inode = state_path.stat().st_ino
    with open(backup, "rb") as src, open(state_path, "r+b") as dst:
        data = src.read()
        dst.seek(0)
        dst.write(data)
        dst.truncate()
    assert state_path.stat().st_ino == inode
    assert follower(t3_source, state_path, start="log").follow().replaced


def test_the_follower_never_writes_to_the_state_database(t3_source, state_path):
    written(state_path, "seed002").close()  # closing checkpoints: the file is whole
    before = (state_path.read_bytes(), state_path.stat().st_mtime_ns)
    follower(t3_source, state_path).follow()
    follower(t3_source, state_path).follow()
    FollowState.objects.all().delete()
    follower(t3_source, state_path, start="log").follow()
    assert (state_path.read_bytes(), state_path.stat().st_mtime_ns) == before
    with pytest.raises(sqlite3.OperationalError, match="readonly|read-only"):
        StateDB(str(state_path)).open().execute("DELETE FROM orchestration_events")


def test_a_missing_file_is_an_error_not_a_crash(t3_source, tmp_path):
    reader = follower(t3_source, tmp_path / "nowhere.sqlite")
    from supervisor.connectors.t3code.schema import StateDBError

    with pytest.raises(StateDBError, match="no such file"):
        reader.step()
    stop = iter([False, True])
    reader.run(0.01, stop=lambda: next(stop))
    assert "no such file" in FollowState.objects.get().last_error


# --- the command, the beat job and the report -------------------------------------------


def test_follow_t3_once_prints_counts_and_needs_an_existing_source(t3_source, state_path):
    written(state_path, "seed000").close()
    out = io.StringIO()
    call_command(
        "follow_t3", "--db", str(state_path), "--source", t3_source.name, "--once", stdout=out
    )
    assert "events sent" in out.getvalue()
    assert IngestedEvent.objects.filter(source=t3_source).count() > 40
    with pytest.raises(CommandError, match="no source"):
        call_command("follow_t3", "--db", str(state_path), "--source", "nobody", "--once")


def test_the_beat_job_follows_every_t3_source_with_a_db_path(t3_source, state_path, tmp_path):
    written(state_path, "seed001").close()
    t3_source.connector, t3_source.connector_settings = "t3code", {"db_path": str(state_path)}
    t3_source.save()
    idle, _ = do_create_source("t3-no-path", scopes="ingest")
    idle.connector = "t3code"
    idle.save()
    t3_tasks._followers.clear()
    read = t3_tasks.follow_t3_sources.apply().get()
    assert read["t3-origin"] == 0  # imported on its first run: nothing after it yet
    assert "t3-no-path" not in read
    assert Task.objects.filter(task_id="node:delegated-task:cmd%3Aremote-probe").exists()
    # The next beat finds nothing new, the file still open.
    assert t3_tasks.follow_t3_sources.apply().get() == {"t3-origin": 0}


def test_two_followers_of_one_source_take_turns_and_read_each_row_once(t3_source, state_path):
    written(state_path, "seed002").close()
    first = follower(t3_source, state_path, start="log", batch_size=4)
    second = follower(t3_source, state_path, start="log", batch_size=4)
    rows = 0
    while True:
        progress = [first.step(), second.step()]
        rows += sum(p.rows for p in progress)
        assert all(p.duplicates == 0 for p in progress)
        if not any(p.rows for p in progress):
            break
    assert rows == FollowState.objects.get().rows_read
    assert open_flag_differences(t3_source, "seed002") == []
    assert_no_doubles(t3_source)


@pytest.mark.django_db(transaction=True)
def test_a_source_another_worker_holds_is_skipped(state_path):
    from django.db import connection, transaction

    if not connection.features.has_select_for_update_skip_locked:
        pytest.skip("SQLite has no row locks: its writers queue on the database lock")
    source, _ = do_create_source("t3-held", scopes="ingest")
    written(state_path, "healthy").close()
    state = FollowState.objects.create(source=source)
    held, release = threading.Event(), threading.Event()

    def other_worker():
        with transaction.atomic():
            FollowState.objects.select_for_update().get(pk=state.pk)
            held.set()
            release.wait(10)
        connection.close()

    worker = threading.Thread(target=other_worker)
    worker.start()
    try:
        assert held.wait(10)
        assert follower(source, state_path).step().locked
    finally:
        release.set()
        worker.join()
    assert not follower(source, state_path).step().locked


def test_report_t3_audits_a_state_database_in_a_throw_away_store(state_path):
    written(state_path, "seed000").close()
    out = io.StringIO()
    call_command("report", "--t3", str(state_path), "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["tasks_seen"] == 3
    assert report["gap_finalizations"]["count"] == 1
    assert report["undelivered_result_open"]["count"] == 1
    assert not Source.objects.exists()  # nothing stayed in the configured database


def test_rows_far_apart_in_time_keep_a_long_run_alive(t3_source, state_path):
    """Turn items and assistant text of a run under way are its activity (one per 30 s)."""
    t3 = FakeT3(state_path)
    t3.thread("thread:x", at="2026-11-10T08:00:00.000Z", title="x")
    run = t3.run("thread:x", 1, at="2026-11-10T08:00:00.000Z")
    for second in (1, 5, 40, 41, 100):
        t3.ignored_event(
            at=f"2026-11-10T08:{second // 60:02d}:{second % 60:02d}.000Z",
            thread="thread:x",
            run=run,
        )
    t3.close()
    follower(t3_source, state_path, start="log").follow()
    activity = IngestedEvent.objects.filter(type="run.activity").count()
    assert activity == 3


def test_a_batch_is_fast_enough(t3_source, state_path):
    """Not a benchmark (bench/t3_follow.py is): a guard against a quadratic slip."""
    t3 = FakeT3(state_path)
    for index in range(4):
        TIMELINES["seed000"].write(renamed(t3, f"copy{index}/") if index else t3)
    t3.close()
    started = time.monotonic()
    progress = follower(t3_source, state_path, start="log").follow()
    assert progress.rows > 300 and progress.duplicates == 0
    assert time.monotonic() - started < 20


# --- a file caught before T3 has made its tables ------------------------------------


@pytest.mark.parametrize("start", ["import", "log"])
def test_a_file_opened_before_t3_made_its_tables_is_read_once_they_exist(
    t3_source, state_path, start
):
    # T3 creates its state file a moment (0.06-0.17 s measured) before its migrations
    # commit; a follower that opens it in between must not keep the empty schema.
    sqlite3.connect(state_path).close()  # the file, no tables yet
    early = follower(t3_source, state_path, start=start)
    with pytest.raises(StateDBError, match="no T3 event log"):
        early.follow()

    written(state_path, "seed001").close()
    early.follow()
    assert Task.objects.filter(task_id="node:delegated-task:cmd%3Aremote-probe").exists()
    early.close()


def test_the_beat_job_follows_the_other_sources_when_one_fails(t3_source, state_path, tmp_path):
    written(state_path, "seed001").close()
    broken, _ = do_create_source("t3-broken", scopes="ingest")
    broken.connector = "t3code"
    broken.connector_settings = {"db_path": str(tmp_path / "half-made.sqlite")}
    broken.save()
    sqlite3.connect(tmp_path / "half-made.sqlite").close()  # T3 still making it
    t3_source.connector, t3_source.connector_settings = "t3code", {"db_path": str(state_path)}
    t3_source.save()
    t3_tasks._followers.clear()

    read = t3_tasks.follow_t3_sources.apply().get()

    assert read == {"t3-origin": 0}  # imported; the broken one said why and was passed
    assert Task.objects.filter(task_id="node:delegated-task:cmd%3Aremote-probe").exists()
    assert "no T3 event log" in FollowState.objects.get(source=broken).last_error


def test_times_t3_got_wrong_give_way_to_the_rows_own_and_never_stop_following(
    t3_source, state_path
):
    """A T3 time outside the window the supervisor accepts (year 9999, one
    that is no real time in UTC, no real date) is passed over for the row's own time,
    counted; following goes on and no event is a dead letter."""
    t3 = FakeT3(state_path)
    t3.thread("thread:x", at="2026-11-10T08:00:00.000Z", title="x")
    run = t3.run("thread:x", 1, at="2026-11-10T08:00:00.000Z")
    t3.update_run(run, at="2026-11-10T08:00:01.000Z", status="running")
    for when in ("9999-12-31T23:59:59-05:00", "2026-02-30T08:00:00.000Z"):
        t3.ignored_event(at=when, thread="thread:x", run=run)  # activity, told by T3's time
    t3.update_run(
        run, at="2026-11-10T08:05:00.000Z", status="completed", completedAt="9999-12-31T23:59:00Z"
    )
    t3.close()
    progress = follower(t3_source, state_path, start="log").follow()
    assert progress.rejected == 0 and not DeadLetter.objects.exists()
    finished = IngestedEvent.objects.get(type="run.finished")
    assert finished.at.isoformat() == "2026-11-10T08:05:00+00:00"
    state = FollowState.objects.get()
    assert state.unknown["timestamp:outside the window"] == 1
    assert state.position == progress.position and progress.rows == 6
