"""The one reading of what the parent holds for a task (core.facts.handover)."""

from supervisor.core.actions.previews import delivery_text
from supervisor.core.facts import handover
from supervisor.core.models import Task
from tests.support.snapshots import TASK, report, run, snapshot, task, wake

RESULT = "Lint clean: 0 findings in src/."
LATER = "Fixed the flaky test; the suite passes."


def reading(*views):
    snap = snapshot(*views)
    return handover.read(snap, snap.tasks[TASK])


def test_a_terminal_report_hands_its_text_to_the_parent():
    read = reading(
        task(reports=[report("completed", 20, summary=RESULT)]),
        run("r1", 1, finished=10, summary=RESULT),
    )
    assert read.latest.reached and read.latest.how == "by the report completed"
    assert [(g.text, g.reached) for g in read.given] == [(RESULT, True)]


def test_a_report_that_says_delivery_wake_hands_nothing_until_a_wake_is_delivered():
    views = [
        task(reports=[report("completed", 20, summary=RESULT, delivery="wake")]),
        run("r1", 1, finished=10, summary=RESULT),
    ]
    queued = wake("w1", summary=RESULT, queued=21)
    read = reading(*views, queued)
    assert not read.latest.reached
    assert [(g.text, g.reached) for g in read.given] == [(RESULT, False)]
    assert "by wake only" in read.given[0].why_not
    delivered = wake("w1", summary=RESULT, queued=21, delivered=22)
    assert reading(*views, delivered).latest.reached


def test_a_report_ended_by_a_restart_hands_nothing():
    read = reading(
        task(reports=[report("cancelled", 20, summary=RESULT, cause="restart")]),
        run("r1", 1, finished=10, summary=RESULT),
    )
    assert not read.latest.reached
    assert "restart" in read.given[0].why_not


def test_a_delivery_by_hand_is_given_without_its_header():
    header = delivery_text(Task(task_id=TASK, title="Lint"), "r1", RESULT)
    read = reading(
        task(reports=[report("completed", 20, summary="Still linting.")]),
        run("r1", 1, finished=10, summary=RESULT),
        wake("m1", source=("manual", TASK), summary=header, queued=30),
    )
    [by_hand] = [g for g in read.given if g.by_hand]
    assert (by_hand.text, by_hand.run, by_hand.reached) == (RESULT, "r1", True)
    assert read.same_as_latest(by_hand)
    assert read.latest.reached and read.latest.how == "by delivery by hand (wake m1)"


def test_a_later_run_delivered_by_hand_is_the_latest_result():
    # Run 2 was started by a message (not the task's own); an operator delivered it.
    header = delivery_text(Task(task_id=TASK, title="Lint"), "r2", LATER)
    read = reading(
        task(reports=[report("failed", 20, summary="API Error: 529 overloaded")]),
        run("r1", 1, finished=10, summary="API Error: 529 overloaded"),
        run("r2", 2, trigger=("message", None), requested=30, finished=40, summary=LATER),
        wake("m1", source=("manual", TASK), summary=header, queued=50),
    )
    assert (read.latest.run, read.latest.text) == ("r2", LATER)
    assert read.latest.reached and read.latest.by_hand
