"""The failure kinds' T3 shapes on the real T3 Code servers (the kits beside the clone, as in
test_real_server.py): what the kits' builds write of them, read from the log and
imported from the projections.

- `healthy-failure`: the child's run fails with T3's `error` turn item (the scripted
  provider's `provider_error`); its class reaches the run's `run.finished` and the
  failed task's report as `failure_class`.
- `delegate`: the scripted agent calls T3's MCP `delegate_task` with `clientRequestId`
  `t3kit:<runId>`; T3 keys the task's command, and so its id, by it, and
  `task.delegated` says it as `client_request_id`. The agent calls T3's MCP endpoint
  itself, so neither build writes a `dynamic_tool` item for the call: no
  `task.requested` comes from these rows (the call's item is tested on fake databases,
  test_failure_shapes.py).

In CI these tests run and fail, never skip; elsewhere, without the kits or where they
cannot build, they skip and say why."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from supervisor.connectors.t3code.follower import projections
from supervisor.connectors.t3code.mapping import Mapper
from supervisor.connectors.t3code.schema import StateDB
from tests.support.t3 import plays
from tests.support.t3.kits import built
from tests.support.t3.plays import KITS

pytestmark = pytest.mark.real_t3

VERSIONS = sorted(KITS)


def played(version: str, name: str) -> tuple[Path, dict]:
    """One kit scenario, played once per clone (reusing the background player's play,
    or test_real_server's), its base dir and its scenario.json."""
    kit = built(KITS[version])
    base = plays.base_dir(version, name, {version: plays.kit_digest(kit)})
    with plays.held(plays.PLAYING):  # after the background player, if it still plays
        failed = plays.play(kit, base) and plays.play(kit, base)  # once more if it failed
    assert not failed, f"kit scenario {version} {name} failed: {failed}"
    return base, json.loads((base / "scenario.json").read_text())


def mapped(base: Path, how: str) -> list[dict]:
    db = StateDB(str(base / "userdata" / "state.sqlite"))
    try:
        mapper = Mapper(lookup=db)
        if how == "log":
            events = mapper.map_rows(db.rows_after(0, 1_000_000))
        else:
            events = mapper.import_state(**projections(db))
    finally:
        db.close()
    assert dict(mapper.unknown) == {}
    return events


def latest(events: list[dict], event_type: str, **match) -> dict:
    told = [
        e
        for e in events
        if e["type"] == event_type and all(e["data"].get(k) == v for k, v in match.items())
    ]
    assert told, f"no {event_type} with {match}"
    return max(told, key=lambda e: (e["at"], e["id"]))["data"]


def error_items(base: Path) -> list[dict]:
    """T3's own error turn items, read straight from its projection."""
    with sqlite3.connect(f"file:{base / 'userdata' / 'state.sqlite'}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT payload_json FROM orchestration_v2_projection_turn_items WHERE type = 'error'"
        ).fetchall()
    return [json.loads(payload) for (payload,) in rows]


def tool_calls(base: Path) -> int:
    with sqlite3.connect(f"file:{base / 'userdata' / 'state.sqlite'}?mode=ro", uri=True) as conn:
        return conn.execute(
            "SELECT COUNT(*) FROM orchestration_v2_projection_turn_items"
            " WHERE type = 'dynamic_tool'"
        ).fetchone()[0]


@pytest.mark.parametrize("how", ["log", "import"])
@pytest.mark.parametrize("version", VERSIONS)
def test_a_real_failed_runs_class_reaches_its_end_and_its_tasks_report(version, how):
    base, scenario = played(version, "healthy-failure")
    [task] = scenario["tasks"]
    child_run = task["childRuns"][0]
    [item] = error_items(base)
    assert item["runId"] == child_run["id"]
    written = item["failure"]["class"]
    assert written == "provider_error"  # what the kit's scripted failure says
    events = mapped(base, how)
    finished = latest(events, "run.finished", run=child_run["id"])
    assert (finished["status"], finished["failure_class"]) == ("failed", written)
    assert finished["error"] == item["failure"]["message"]
    report = latest(events, "task.reported", task=task["taskId"])
    assert (report["status"], report["failure_class"]) == ("failed", written)
    # The runs that did not fail carry none.
    others = [
        e["data"]
        for e in events
        if e["type"] == "run.finished" and e["data"]["run"] != child_run["id"]
    ]
    assert others and not any("failure_class" in data for data in others)


@pytest.mark.parametrize("how", ["log", "import"])
@pytest.mark.parametrize("version", VERSIONS)
def test_a_real_delegation_says_the_agents_client_request_id(version, how):
    base, scenario = played(version, "delegate")
    [task] = scenario["tasks"]
    events = mapped(base, how)
    delegated = latest(events, "task.delegated", task=task["taskId"])
    assert delegated["client_request_id"] == f"t3kit:{task['delegatingRunId']}"
    # The scripted agent's call writes no tool item in these builds: nothing requested.
    assert tool_calls(base) == 0
    assert [e for e in events if e["type"] == "task.requested"] == []


def test_a_real_roster_entry_left_listed_is_an_item_unfinished_until_the_restart():
    """0.0.33's `restart`: the background task's child starts `make reindex` (a roster
    entry) and ends its run; T3 finalizes and delivers the task with the entry still
    listed, and it stays listed, an item unfinished, until the restart's recovery empties
    the roster (its `background.finished` is that recovery's)."""
    base, scenario = played("0.0.33", "restart")
    tasks = {task["role"]: task for task in scenario["tasks"]}
    background = tasks["the background task"]
    child_run = background["childRuns"][0]["id"]
    events = mapped(base, "log")
    [started] = [
        e
        for e in events
        if e["type"] == "background.started" and e["data"]["thread"] == background["childThreadId"]
    ]
    assert (started["data"]["run"], started["data"]["label"]) == (child_run, "make reindex")
    completed = [
        e["at"]
        for e in events
        if e["type"] == "task.reported"
        and e["data"]["task"] == background["taskId"]
        and e["data"]["status"] == "completed"
    ]
    [finished] = [
        e
        for e in events
        if e["type"] == "background.finished" and e["data"]["item"] == started["data"]["item"]
    ]
    cut = [e["at"] for e in events if e["type"] == "run.finished" and e["data"].get("cause")]
    assert completed and cut and max(completed) < min(cut) <= finished["at"]
