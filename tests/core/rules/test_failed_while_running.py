"""failed_while_running: reported failed while the child went on (contract §5)."""

from supervisor.core.rules import failed_while_running as rule
from tests.support.snapshots import SETTINGS, TASK, at, report, run, snapshot, subjects, task

NOW = at(3600)


def open_on(*views):
    return subjects(rule.findings(snapshot(*views), SETTINGS, NOW))


def failed(status="failed", result_run="r1"):
    return report(status, 100, summary="API Error", result_run=result_run)


def test_opens_when_a_later_child_run_is_unfinished():
    views = task(reports=[failed()]), run("r1", 1, finished=90, status="failed")
    later = run("r2", 2, trigger=("message", None), requested=200)
    assert open_on(*views, later) == [TASK]


def test_opens_when_a_later_child_run_finished_completed():
    # seed002 (a1): reported failed on run 1's 403; run 2 (a message run: any run of the
    # child thread counts) finished completed. Open to the end: nothing undoes it.
    views = task(reports=[failed()]), run("r1", 1, finished=90, status="failed")
    later = run("r2", 2, trigger=("message", None), requested=200, finished=600)
    assert open_on(*views, later) == [TASK]


def test_interrupted_counts_like_failed():
    views = task(reports=[failed("interrupted")]), run("r1", 1, finished=90, status="failed")
    later = run("r2", 2, trigger=("restart", "r1"), requested=200)
    assert open_on(*views, later) == [TASK]


def test_not_open_when_the_later_run_also_failed():
    views = task(reports=[failed()]), run("r1", 1, finished=90, status="failed")
    later = run("r2", 2, trigger=("message", None), requested=200, finished=300, status="failed")
    assert open_on(*views, later) == []


def test_not_open_without_a_later_run():
    # healthy-real-failure: the child stopped with the failure.
    assert open_on(task(reports=[failed()]), run("r1", 1, finished=90, status="failed")) == []


def test_not_open_when_the_report_is_cancelled():
    views = task(reports=[failed("cancelled")]), run("r1", 1, finished=90, status="failed")
    later = run("r2", 2, trigger=("message", None), requested=200)
    assert open_on(*views, later) == []


def test_without_a_result_run_compares_with_the_highest_owned_run():
    views = (
        task(reports=[failed(result_run=None)]),
        run("r1", 1, finished=90, status="failed"),
        run("r2", 2, trigger=("restart", "r1"), requested=100, finished=150, status="failed"),
    )
    assert open_on(*views) == []
    later = run("r3", 3, trigger=("message", None), requested=200)
    assert open_on(*views, later) == [TASK]


def test_run_known_only_by_its_end_has_no_ordinal_to_compare():
    views = task(reports=[failed()]), run("r1", 1, finished=90, status="failed")
    placeholder = run("r2", 2, requested=None, finished=600)
    assert open_on(*views, placeholder) == []


def test_evidence_names_the_report_and_the_later_run():
    views = task(reports=[failed()]), run("r1", 1, finished=90, status="failed")
    later = run("r2", 2, trigger=("message", None), requested=200, finished=600)
    [finding] = rule.findings(snapshot(*views, later), SETTINGS, NOW)
    assert finding.evidence["events"] == ["report/failed@100", "r2/requested"]


def test_a_task_failed_before_any_owned_run_counts_any_run_of_its_child():
    # Contract 1.1: T's highest owned ordinal is 0 while T owns no run, so any run of the
    # child thread counts (here a message run: the first run was never told).
    views = task(reports=[failed(result_run=None)])
    later = run("r1", 1, trigger=("message", None), requested=200)
    assert open_on(views, later) == [TASK]
    assert open_on(views, run("r1", 1, trigger=("message", None), finished=300)) == [TASK]
    failed_too = run("r1", 1, trigger=("message", None), finished=300, status="failed")
    assert open_on(views, failed_too) == []


def test_a_result_run_of_unknown_ordinal_and_no_owned_run_compare_with_0():
    views = task(reports=[failed(result_run="r9")])
    assert open_on(views, run("r1", 1, trigger=("message", None), requested=200)) == [TASK]
