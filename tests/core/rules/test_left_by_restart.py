"""left_by_restart: the orchestrator's restart cut the child's latest run while the task
still says it is under way (a contract extension)."""

from supervisor.core.rules import left_by_restart as rule
from tests.support.snapshots import SETTINGS, TASK, at, report, run, snapshot, subjects, task


def cut(**more):
    return run("r1", 1, finished=100, status="cancelled", cause="restart", **more)


def open_at(seconds, *views):
    return subjects(rule.findings(snapshot(*views), SETTINGS, at(seconds)))


def test_opens_at_once_when_a_restart_cut_the_latest_run_of_a_running_task():
    assert open_at(100, task(reports=[report("running", 1)]), cut()) == [TASK]
    assert open_at(100, task(), cut()) == [TASK]  # no report at all


def test_a_run_cancelled_by_someone_is_not_a_restart():
    cancelled = run("r1", 1, finished=100, status="cancelled")
    assert open_at(100, task(reports=[report("running", 1)]), cancelled) == []


def test_a_later_run_of_the_child_resolves_it():
    again = run("r2", 2, trigger=("message", None), requested=200)
    assert open_at(300, task(reports=[report("running", 1)]), cut(), again) == []


def test_a_terminal_report_resolves_it():
    assert open_at(300, task(reports=[report("cancelled", 150)]), cut()) == []


def test_the_evidence_names_the_cut_run():
    [finding] = rule.findings(
        snapshot(task(reports=[report("running", 1)]), cut()), SETTINGS, at(100)
    )
    assert finding.evidence["run"] == "r1"
    assert finding.evidence["events"] == ["r1/finished"]
