"""premature_completion: reported done while the child still owes work (contract §5)."""

from supervisor.core.rules import premature_completion as rule
from tests.support.snapshots import (
    CHILD,
    SETTINGS,
    TASK,
    at,
    item,
    report,
    run,
    snapshot,
    subjects,
    task,
    wake,
)

NOW = at(3600)


def open_on(*views):
    return subjects(rule.findings(snapshot(*views), SETTINGS, NOW))


def completed(when=100, summary="interim", result_run="r1", **fields):
    return report("completed", when, summary=summary, result_run=result_run, **fields)


def test_opens_when_reported_completed_while_an_owned_run_is_unfinished():
    assert open_on(task(reports=[completed(result_run=None)]), run("r1", 1)) == [TASK]


def test_opens_while_an_owned_background_item_is_unfinished():
    views = task(reports=[completed()]), run("r1", 1, finished=60, summary="interim"), item("bg")
    assert open_on(*views) == [TASK]


def test_item_started_not_awaited_is_not_owed():
    views = (
        task(reports=[completed()]),
        run("r1", 1, finished=60, summary="interim"),
        item("bg", awaited=False),
    )
    assert open_on(*views) == []


def test_opens_while_a_task_delegated_from_an_owned_run_has_not_ended():
    views = (
        task(reports=[completed()]),
        run("r1", 1, finished=60, summary="interim"),
        task("task:review", parent=CHILD, child="thread:review", parent_run="r1", delegated=5),
    )
    assert open_on(*views) == [TASK]


def test_delegated_task_that_ended_is_not_owed():
    views = (
        task(reports=[completed()]),
        run("r1", 1, finished=60, summary="interim"),
        task(
            "task:review",
            parent=CHILD,
            child="thread:review",
            parent_run="r1",
            reports=[report("completed", 50)],
        ),
    )
    assert open_on(*views) == []


def test_opens_when_an_owned_run_came_after_the_result_run():
    # seed001: completed with run 1's "WAITING"; run 2, woken by the Monitor, is owned and
    # later, and its "FINAL" never reaches the parent: open to the end.
    views = (
        task(reports=[completed(summary="WAITING")]),
        run("r1", 1, finished=16, summary="WAITING"),
        item("mon", started=15, finished=40),
        wake("w", to=CHILD, source=("background", "mon"), queued=40),
        run("r2", 2, trigger=("wake", "w"), requested=41, finished=43, summary="FINAL"),
        wake("w-parent", summary="WAITING", queued=101),
    )
    assert open_on(*views) == [TASK]


def test_opens_on_the_reports_own_pending_child_runs_hint():
    # Nothing owed by the runs, but the latest result has not reached the parent either.
    views = (
        task(reports=[completed(pending_child_runs=True)]),
        run("r1", 1, finished=60, summary="interim"),
    )
    assert open_on(*views) == [TASK]


def test_result_available_under_a_working_status_counts_as_completed():
    views = (
        task(reports=[report("waiting", 100, work_state="result_available", result_run="r1")]),
        run("r1", 1),
    )
    assert open_on(*views) == [TASK]


def test_result_available_under_a_failed_status_is_not_a_completion():
    views = (
        task(reports=[report("failed", 100, work_state="result_available", result_run="r1")]),
        run("r1", 1),
    )
    assert open_on(*views) == []


def test_not_open_while_the_report_is_not_completed():
    assert open_on(task(reports=[report("running", 100)]), run("r1", 1)) == []


def test_not_open_when_nothing_is_owed():
    # seed000's review tasks: completed with their only run's text; nothing owed, never open.
    views = task(reports=[completed()]), run("r1", 1, finished=60, summary="interim")
    assert open_on(*views) == []


def test_work_appearing_after_the_report_counts():
    views = (
        task(reports=[completed()]),
        run("r1", 1, finished=60, summary="interim"),
        item("bg", started=30, finished=200),
        run("r2", 2, trigger=("background", "bg"), requested=201),
    )
    assert open_on(*views) == [TASK]


def test_resolves_when_nothing_is_pending_and_the_latest_result_reached_the_parent():
    views = (
        task(reports=[completed()]),
        run("r1", 1, finished=60, summary="interim"),
        item("bg", started=30, finished=200),
        run("r2", 2, trigger=("background", "bg"), requested=201, finished=260, summary="final"),
        wake("w", summary="final", queued=261),
    )
    assert open_on(*views) == []


def test_stays_open_while_work_is_pending_even_if_the_latest_result_reached_the_parent():
    views = (
        task(reports=[completed()]),
        run("r1", 1, finished=60, summary="interim"),
        item("bg", started=30),
        wake("w", summary="interim", queued=101),
    )
    assert open_on(*views) == [TASK]


def test_resolves_when_nothing_is_pending_and_there_is_no_latest_result():
    # A follow-up owns no runs: only its report's hint raises it, and with nothing owned
    # pending and no latest result the resolve condition holds at once.
    views = (task(follow_up_of="task:first", reports=[completed(pending_child_runs=True)]),)
    assert open_on(*views) == []


def test_stale_finalize_stays_open():
    # seed000 (retry-port): completed at 22:50:35.143 with run 1's interim text while the
    # reviews delegated from run 1 were open; runs 2-4 (woken by the suite and the reviews)
    # are owned and later, and run 4's "PR #812" never reaches the parent.
    views = (
        task(reports=[completed(when=515, summary="Still running")]),
        run("r1", 1, finished=120, summary="Still running"),
        item("suite", started=70, finished=515),
        task("task:review-a", parent=CHILD, child="thread:a", parent_run="r1", delegated=80),
        wake("w1", to=CHILD, source=("background", "suite"), queued=515),
        run("r2", 2, trigger=("wake", "w1"), requested=516, finished=610, summary="Suite passed"),
        wake("w2", to=CHILD, source=("task", "task:review-a"), source_thread="thread:a"),
        run("r4", 4, trigger=("wake", "w2"), requested=1260, finished=1410, summary="PR #812"),
        wake("w-parent", summary="Still running", queued=515),
    )
    findings = rule.findings(snapshot(*views), SETTINGS, NOW)
    assert subjects(findings) == [TASK]
    assert findings[0].evidence["latest_run"] == "r4"


def test_evidence_names_the_report_and_the_owed_run():
    views = task(reports=[completed(result_run=None)]), run("r1", 1)
    [finding] = rule.findings(snapshot(*views), SETTINGS, NOW)
    assert finding.evidence["events"] == ["report/completed@100", "r1/requested"]


def test_text_groups_the_owed_work():
    views = (
        task(reports=[completed()]),
        run("r1", 1, finished=60, summary="interim"),
        item("bg", started=30, finished=200),
        run("r2", 2, trigger=("background", "bg"), requested=201),
        run("r3", 3, trigger=("restart", "r1"), requested=201, finished=300, summary="final"),
    )
    [finding] = rule.findings(snapshot(*views), SETTINGS, NOW)
    assert finding.evidence["text"] == (
        "Reported completed while it still owes work: unfinished runs (run 2); "
        "runs later than run 1, the result run (run 3). "
        "Its latest result, from run 3, has not reached the parent."
    )
