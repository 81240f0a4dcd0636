"""completed_on_failure: a success that hides a failure."""

from dataclasses import replace

import pytest

from supervisor.core.rules import completed_on_failure as rule
from tests.support.snapshots import SETTINGS, TASK, at, report, run, snapshot, subjects, task, wake

NOW = at(3600)
TEXT = "Ported the client to the v2 API."


def failed_run(status="failed", ordinal=1, finished=50, summary="", error=None, **kw):
    return replace(
        run(f"r{ordinal}", ordinal, finished=finished, status=status, summary=summary, **kw),
        error=error,
    )


def open_on(*views):
    return subjects(rule.findings(snapshot(*views), SETTINGS, NOW))


@pytest.mark.parametrize("status", ["failed", "interrupted", "cancelled"])
def test_completed_while_its_result_run_did_not_complete(status):
    views = (
        task(reports=[report("completed", 60, summary="Partial.", result_run="r1")]),
        failed_run(status, summary="Partial."),
    )
    assert open_on(*views) == [TASK]


def test_a_completed_result_run_is_healthy():
    views = (
        task(reports=[report("completed", 60, summary=TEXT, result_run="r1")]),
        run("r1", 1, finished=50, summary=TEXT),
    )
    assert open_on(*views) == []


def test_without_a_result_run_the_highest_finished_owned_run_is_judged():
    views = (
        task(reports=[report("completed", 60, summary="Done, more or less.")]),
        run("r1", 1, finished=20, summary="First pass."),
        failed_run("interrupted", ordinal=2, finished=50, trigger=("restart", "r1")),
    )
    assert open_on(*views) == [TASK]


def test_the_summary_is_the_runs_error():
    # hermes #82599: the error text handed on as the result; compared as texts are.
    views = (
        task(reports=[report("completed", 60, summary="  API Error:\n 400 bad request ")]),
        replace(run("r1", 1, finished=50, summary="x"), error="API Error: 400 bad request"),
    )
    found = rule.findings(snapshot(*views), SETTINGS, NOW)
    assert subjects(found) == [TASK]
    assert "is the error of the child's run 1" in found[0].evidence["text"]


@pytest.mark.parametrize("status", ["failed", "interrupted", "cancelled"])
def test_t3s_fallback_text_for_a_child_that_did_not_complete(status):
    summary = f"Child task ended with status {status}."
    assert open_on(task(reports=[report("completed", 60, summary=summary)])) == [TASK]


def test_t3s_fallback_text_for_a_completed_child_is_no_failure():
    summary = "Child task ended with status completed."
    assert open_on(task(reports=[report("completed", 60, summary=summary)])) == []


def test_only_a_completed_report_counts():
    for status in ("failed", "interrupted", "cancelled", "running"):
        views = (task(reports=[report(status, 60, result_run="r1")]), failed_run("failed"))
        assert open_on(*views) == []


def test_not_while_an_owned_run_is_still_under_way():
    # A restart's continuation runs: premature_completion's case, and no continue is due.
    views = (
        task(reports=[report("completed", 60, summary="Partial.", result_run="r1")]),
        failed_run("interrupted", summary="Partial."),
        run("r2", 2, trigger=("restart", "r1"), requested=55),
    )
    assert open_on(*views) == []


def test_an_unfinished_run_of_someone_else_does_not_hold_it_back():
    views = (
        task(reports=[report("completed", 60, summary="Partial.", result_run="r1")]),
        failed_run("interrupted", summary="Partial."),
        run("r2", 2, trigger=("message", None), requested=55),
    )
    assert open_on(*views) == [TASK]


def later(reached: bool, status="completed"):
    views = [
        task(reports=[report("completed", 60, summary="Partial.", result_run="r1")]),
        failed_run("interrupted", summary="Partial."),
        run(
            "r2",
            2,
            trigger=("restart", "r1"),
            requested=55,
            finished=90,
            status=status,
            summary=TEXT,
        ),
    ]
    if reached:
        views.append(wake("w2", summary=TEXT, queued=95, delivered=96))
    return views


def test_resolved_when_a_later_run_completed_and_its_result_reached_the_parent():
    assert open_on(*later(reached=True)) == []


def test_open_while_the_later_result_has_not_reached_the_parent():
    assert open_on(*later(reached=False)) == [TASK]


def test_a_later_run_that_failed_too_does_not_answer_it():
    assert open_on(*later(reached=True, status="failed")) == [TASK]


def test_a_delivery_by_hand_of_the_later_result_answers_it():
    views = later(reached=False) + [
        wake("m1", source=("manual", TASK), summary=f"[Result]\n{TEXT}", queued=100)
    ]
    assert open_on(*views) == []


def test_a_new_report_on_the_completed_run_answers_it():
    views = later(reached=False)
    views[0] = task(
        reports=[
            report("completed", 60, summary="Partial.", result_run="r1"),
            report("completed", 100, summary=TEXT, result_run="r2"),
        ]
    )
    assert open_on(*views) == []


def test_evidence_names_the_report_the_run_and_its_status():
    views = (
        task(reports=[report("completed", 60, summary="Partial.", result_run="r1", id="rep")]),
        failed_run("cancelled", summary="Partial."),
    )
    (found,) = rule.findings(snapshot(*views), SETTINGS, NOW)
    assert found.evidence["events"] == ["rep", "r1/finished"]
    assert found.evidence["run"] == "r1" and found.evidence["run_status"] == "cancelled"
    assert "run 1, its result run, finished cancelled" in found.evidence["text"]


def test_a_named_result_run_not_described_yet_is_not_judged_by_another():
    views = (
        task(reports=[report("completed", 60, summary=TEXT, result_run="r9")]),
        failed_run("failed"),
    )
    assert open_on(*views) == []


def test_a_follow_up_owns_no_runs_and_is_judged_by_its_text_alone():
    views = (
        task("task:f", follow_up_of=TASK, reports=[report("completed", 60, summary="Fine.")]),
        failed_run("failed", trigger=("delegation", "task:f")),
    )
    assert open_on(*views) == []


def test_the_action_preview_says_only_a_later_completed_result_answers_it():
    from supervisor.core.actions import outcomes as action_outcomes

    snap = snapshot(*later(reached=False))
    view = snap.tasks[TASK]
    answers, stays = action_outcomes.outcomes(snap, view, "deliver", {rule.KIND}, run="r2")
    assert [kind for kind, _ in answers] == [rule.KIND] and stays == []
    answers, stays = action_outcomes.outcomes(snap, view, "deliver", {rule.KIND}, run="r1")
    assert answers == [] and "not a completed run after the failed run 1" in stays[0][1]
    answers, stays = action_outcomes.outcomes(snap, view, "continue", {rule.KIND}, run=None)
    assert answers == [] and "until the continued run completes" in stays[0][1]
