"""undelivered_result: a later owned run's result did not reach the parent in time (§5)."""

from supervisor.core.rules import undelivered_result as rule
from tests.support.snapshots import (
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

FINISHED = 260  # run 2's end
GRACE = SETTINGS.delivery_grace


def completed(result_run="r1", **fields):
    return report("completed", 100, summary="interim", result_run=result_run, **fields)


def views(*reports, extra=()):
    return (
        task(reports=list(reports)),
        run("r1", 1, finished=60, summary="interim"),
        item("bg", started=30, finished=200),
        run(
            "r2", 2, trigger=("background", "bg"), requested=201, finished=FINISHED, summary="final"
        ),
        *extra,
    )


def open_at(seconds, *views):
    return subjects(rule.findings(snapshot(*views), SETTINGS, at(seconds)))


def test_not_open_just_before_delivery_grace():
    assert open_at(FINISHED + GRACE - 1, *views(completed())) == []


def test_opens_exactly_at_delivery_grace():
    # seed001: run 2 ("FINAL") ended 15:08:43.2; open from 15:09:43.2 on.
    assert open_at(FINISHED + GRACE, *views(completed())) == [TASK]


def test_next_change_is_when_delivery_grace_ends():
    snap = snapshot(*views(completed()))
    assert min(rule.due_times(snap, SETTINGS, at(FINISHED)).values()) == at(FINISHED + GRACE)


def test_no_next_change_once_open():
    snap = snapshot(*views(completed()))
    assert rule.due_times(snap, SETTINGS, at(FINISHED + GRACE)) == {}


def test_not_open_while_the_report_is_not_terminal():
    assert open_at(3600, *views(report("running", 100, result_run="r1"))) == []


def test_not_open_without_a_result_run():
    assert open_at(3600, *views(report("completed", 100, summary="elsewhere"))) == []


def test_result_run_found_by_its_text_counts():
    assert open_at(3600, *views(report("completed", 100, summary="interim"))) == [TASK]


def test_not_open_when_the_latest_result_is_the_result_runs():
    # seed000 (review-a/b), seed003, healthy-*: reported with the only owned run's text.
    assert open_at(3600, *views(completed(result_run="r2"))) == []


def test_a_later_follow_up_run_does_not_count():
    # seed002 (a1): run 2 was started by a message, not owned: a1's latest result is still
    # run 1's, the result run's; that run 2's text went to the parent is another matter.
    snap_views = (
        task(reports=[completed()]),
        run("r1", 1, finished=60, summary="interim"),
        run("r2", 2, trigger=("message", None), requested=201, finished=260, summary="final"),
    )
    assert open_at(3600, *snap_views) == []


def test_resolves_when_the_latest_result_reached_the_parent():
    delivered = wake("w", summary="final", queued=900)
    assert open_at(3600, *views(completed(), extra=[delivered])) == []


def test_reached_under_another_task_id_counts():
    delivered = wake("w", source=("task", "task:follow-up"), summary="final", queued=900)
    assert open_at(3600, *views(completed(), extra=[delivered])) == []


def test_a_newer_result_restarts_the_grace():
    # seed000: each later owned run (2, 3, 4) brings a new latest result; each has its
    # own delivery_grace after its run ends (open from run 4's end + 60 s at the latest).
    newer = run("r3", 3, trigger=("restart", "r2"), requested=270, finished=400, summary="newer")
    assert open_at(400 + GRACE - 1, *views(completed(), extra=[newer])) == []
    assert open_at(400 + GRACE, *views(completed(), extra=[newer])) == [TASK]


def test_evidence_names_the_report_and_the_later_runs_end():
    snap = snapshot(*views(completed()))
    [finding] = rule.findings(snap, SETTINGS, at(3600))
    assert finding.evidence["events"] == ["report/completed@100", "r2/finished"]
    assert (finding.evidence["result_run"], finding.evidence["latest_run"]) == ("r1", "r2")
