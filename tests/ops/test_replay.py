"""`manage.py replay` (contract §7)."""

import io
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from supervisor.core.detection.scenario import Scenario
from supervisor.ops.replay import replay_all
from tests.support.scenarios import CONTRACT_SCENARIOS, OWN_SCENARIOS, load_scenario

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str


def replay(*paths, check=False) -> Outcome:
    """The command in this process (a throw-away store of its own): fast enough to use often."""
    out, err = io.StringIO(), io.StringIO()
    options = {"check": True} if check else {}
    try:
        call_command("replay", *map(str, paths), stdout=out, stderr=err, **options)
        code = 0
    except SystemExit as exc:
        code = exc.code
    except CommandError as exc:
        err.write(str(exc))
        code = 1
    return Outcome(code, out.getvalue(), err.getvalue())


# The command on a few scenarios, the contract's and the project's own: every scenario is
# held to what it expects on the replay the arrival-order properties share
# (tests/properties/test_detection_order.py), as `--check` holds it.
CHECKED = [CONTRACT_SCENARIOS[0], CONTRACT_SCENARIOS[-1], OWN_SCENARIOS[0]]


def test_the_command_line_checks_the_scenarios_it_is_given():
    command = [sys.executable, "manage.py", "replay", "--check", *map(str, CHECKED)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == len(CHECKED)


pytestmark = pytest.mark.django_db


@pytest.mark.slow
def test_output_is_one_json_object_per_scenario_in_the_contract_shape():
    result = replay(*CONTRACT_SCENARIOS)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["scenario"] for line in lines] == [
        load_scenario(p)["name"] for p in CONTRACT_SCENARIOS
    ]
    for line, path in zip(lines, CONTRACT_SCENARIOS, strict=True):
        assert set(line) == {"scenario", "tasks", "threads"}
        delegated = {
            e["data"]["task"]
            for e in load_scenario(path)["events"]
            if e["type"] == "task.delegated"
        }
        assert set(line["tasks"]) == delegated
        for task in line["tasks"].values():
            assert set(task) == {"status", "raised", "open"}
            assert task["raised"] == sorted(task["raised"])
            assert set(task["open"]) <= set(task["raised"])
        for thread in line["threads"].values():
            assert set(thread) == {"raised", "open"}


def test_every_thread_named_in_a_scenario_appears(tmp_path):
    line = json.loads(replay(CONTRACT_SCENARIOS[0]).stdout)
    events = load_scenario(CONTRACT_SCENARIOS[0])["events"]
    named = {
        e["data"][k]
        for e in events
        for k in ("thread", "parent_thread", "child_thread")
        if e["data"].get(k)
    }
    assert named <= set(line["threads"])


@pytest.mark.slow
def test_output_does_not_read_the_expectations(tmp_path):
    scenario = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))
    bare = {k: v for k, v in scenario.items() if k not in ("expect", "expect_open")}
    wrong = {**scenario, "expect": {"tasks": {}, "threads": {}}, "expect_open": {}}
    (tmp_path / "bare.json").write_text(json.dumps(bare))
    (tmp_path / "wrong.json").write_text(json.dumps(wrong))
    outputs = {replay(tmp_path / n).stdout for n in ("bare.json", "wrong.json")}
    assert len(outputs) == 1


def test_check_fails_and_names_the_difference(tmp_path):
    scenario = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed003" in p.name))
    scenario["expect"]["tasks"]["task:probe-b"] = []
    (tmp_path / "wrong.json").write_text(json.dumps(scenario))
    result = replay(tmp_path / "wrong.json", check=True)
    assert result.returncode == 1
    assert "task task:probe-b raised: expected [], got ['dispatch_lag']" in result.stderr


def test_check_fails_on_a_subject_the_scenario_does_not_list(tmp_path):
    scenario = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed004" in p.name))
    scenario["expect"]["threads"] = {}
    (tmp_path / "unlisted.json").write_text(json.dumps(scenario))
    result = replay(tmp_path / "unlisted.json", check=True)
    assert result.returncode == 1
    assert "thread:coordinator-claude" in result.stderr


def test_an_unreadable_scenario_is_a_clear_error(tmp_path):
    (tmp_path / "broken.json").write_text("{")
    result = replay(tmp_path / "broken.json")
    assert result.returncode != 0
    assert "cannot read the scenario" in result.stderr


def test_replay_leaves_the_configured_database_untouched():
    from supervisor.core.models import Source, Task

    [(_, result, _)] = replay_all([Scenario.load(CONTRACT_SCENARIOS[0])])
    assert result["tasks"]
    assert not Task.objects.exists() and not Source.objects.exists()
