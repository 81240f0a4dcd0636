"""cancel_not_propagated: the task says cancelled, yet the work it owns goes on."""

from supervisor.core.rules import cancel_not_propagated as rule
from supervisor.core.rules import left_by_restart
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

GRACE = SETTINGS.cancel_grace
CANCELLED_AT = 100


def cancelled(**fields):
    return report("cancelled", CANCELLED_AT, **fields)


def open_at(seconds, *views):
    return subjects(rule.findings(snapshot(*views), SETTINGS, at(seconds)))


def evidence(seconds, *views):
    (finding,) = rule.findings(snapshot(*views), SETTINGS, at(seconds))
    return finding.evidence


def test_a_run_still_going_after_the_grace_opens_it():
    views = task(reports=[cancelled()]), run("r1", 1)
    assert open_at(CANCELLED_AT + GRACE - 1, *views) == []
    assert open_at(CANCELLED_AT + GRACE, *views) == [TASK]
    assert evidence(CANCELLED_AT + GRACE, *views)["runs"] == ["r1"]


def test_a_run_that_stopped_within_the_grace_is_a_cancel_that_worked():
    views = task(reports=[cancelled()]), run("r1", 1, finished=130, status="cancelled")
    assert open_at(CANCELLED_AT + GRACE, *views) == []


def test_resolves_when_the_run_ends():
    views = task(reports=[cancelled()]), run("r1", 1, finished=500, status="cancelled")
    assert open_at(400, *views) == []  # what is known now: it ended


def test_an_item_still_open_opens_it_awaited_or_not():
    for awaited in (None, True, False):
        views = (
            task(reports=[cancelled()]),
            run("r1", 1, finished=90, status="cancelled"),
            item("monitor", started=50, awaited=awaited),
        )
        assert open_at(CANCELLED_AT + GRACE, *views) == [TASK], awaited
        assert evidence(CANCELLED_AT + GRACE, *views)["items"] == ["monitor"]


def test_a_finished_item_does_not():
    views = (
        task(reports=[cancelled()]),
        run("r1", 1, finished=90, status="cancelled"),
        item("monitor", started=50, finished=120),
    )
    assert open_at(CANCELLED_AT + GRACE, *views) == []


def test_a_sub_task_not_ended_opens_it_and_its_end_resolves_it():
    sub = dict(parent=CHILD, child="thread:sub", parent_run="r1", delegated=40)
    views = task(reports=[cancelled()]), run("r1", 1, finished=90, status="cancelled")
    assert open_at(CANCELLED_AT + GRACE, *views, task("task:sub", **sub)) == [TASK]
    ended = task("task:sub", reports=[report("cancelled", 150)], **sub)
    assert TASK not in open_at(CANCELLED_AT + GRACE, *views, ended)


def test_a_run_requested_after_the_cancel_opens_it_until_it_ends():
    restarted = run("r2", 2, trigger=("restart", "r1"), requested=400)
    views = task(reports=[cancelled()]), run("r1", 1, finished=90, status="cancelled")
    assert open_at(500, *views, restarted) == [TASK]
    assert "run 2 requested after the cancel" in evidence(500, *views, restarted)["text"]
    ended = run("r2", 2, trigger=("restart", "r1"), requested=400, finished=600)
    assert open_at(700, *views, ended) == []


def test_a_continue_by_hand_after_the_cancel_is_the_operators_choice():
    views = (
        task(reports=[cancelled()]),
        run("r1", 1, finished=90, status="cancelled"),
        wake("w-continue", to=CHILD, source=("manual", TASK), queued=300, delivered=301),
        run("r2", 2, trigger=("wake", "w-continue"), requested=301),
        item("build", run="r2", started=320),
        run("r3", 3, trigger=("background", "build"), requested=900),
    )
    assert open_at(1000, *views) == []


def test_a_continue_by_hand_before_the_cancel_is_work_the_cancel_should_stop():
    views = (
        task(reports=[cancelled()]),
        wake("w-continue", to=CHILD, source=("manual", TASK), queued=30, delivered=31),
        run("r1", 1, finished=20),
        run("r2", 2, trigger=("wake", "w-continue"), requested=31),
    )
    assert open_at(CANCELLED_AT + GRACE, *views) == [TASK]


def test_work_not_owned_does_not_count():
    views = (
        task(reports=[cancelled()]),
        run("r1", 1, finished=90, status="cancelled"),
        run("r2", 2, trigger=("message", None), requested=200),
    )
    assert open_at(CANCELLED_AT + GRACE + 500, *views) == []


def test_a_cancel_by_the_restart_is_left_by_restarts_alone():
    views = (
        task(reports=[cancelled(cause="restart")]),
        run("r1", 1, finished=90, status="cancelled", cause="restart"),
        item("monitor", started=50),
    )
    assert open_at(CANCELLED_AT + GRACE, *views) == []
    assert subjects(left_by_restart.findings(snapshot(*views), SETTINGS, at(200))) == [TASK]


def test_other_reports_are_not_its_business():
    for status in ("running", "completed", "failed", "interrupted"):
        views = task(reports=[report(status, CANCELLED_AT)]), run("r1", 1)
        assert open_at(CANCELLED_AT + GRACE, *views) == [], status


def test_a_later_report_that_is_not_cancelled_resolves_it():
    views = task(reports=[cancelled(), report("running", 500)]), run("r1", 1)
    assert open_at(600, *views) == []


def test_due_when_the_grace_ends_only_while_work_is_unfinished():
    views = task(reports=[cancelled()]), run("r1", 1)
    due = rule.due_times(snapshot(*views), SETTINGS, at(CANCELLED_AT))
    assert due == {("task", TASK): at(CANCELLED_AT + GRACE)}
    assert rule.due_times(snapshot(*views), SETTINGS, at(CANCELLED_AT + GRACE)) == {}
    stopped = task(reports=[cancelled()]), run("r1", 1, finished=101, status="cancelled")
    assert rule.due_times(snapshot(*stopped), SETTINGS, at(CANCELLED_AT)) == {}


def test_the_evidence_names_the_cancel_and_the_work():
    views = task(reports=[cancelled()]), run("r1", 1)
    found = evidence(CANCELLED_AT + GRACE, *views)
    assert found["events"] == ["report/cancelled@100", "r1/requested"]
    assert "reported cancelled" in found["text"] and "run 1 still running" in found["text"]
