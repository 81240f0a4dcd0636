"""A task's reading (core.facts.reading): every handing to the parent, and each meaning of
"reached" and "latest result" on small snapshots."""

from supervisor.core.actions.previews import delivery_text
from supervisor.core.facts import reading
from supervisor.core.models import Task
from tests.support.snapshots import PARENT, TASK, report, run, snapshot, task, wake

OVERLOADED = "API Error: 529 Overloaded"
INTERIM = "Running the suite; I will report when it ends."
RESULT = "Suite green: 412 passed."


def the_task(snap):
    return snap.tasks[TASK]


def failed_then_restarted(*, delivered: bool = False):
    """The case where the meanings part: the orchestrator hands results by wake only;
    run 1 fails on a passing fault and the task is reported failed, that wake delivered
    (the parent starts a run for it); run 2, the restart of run 1, completes and its task
    wake is queued."""
    return snapshot(
        task(reports=[report("failed", 11, summary=OVERLOADED, result_run="r1", delivery="wake")]),
        run("r1", 1, finished=10, status="failed", summary=OVERLOADED),
        wake("w1", summary=OVERLOADED, queued=12, delivered=13, outcome="failed"),
        run("p2", 2, thread=PARENT, trigger=("wake", "w1"), requested=13, finished=20),
        run("r2", 2, trigger=("restart", "r1"), requested=14, finished=40, summary=RESULT),
        wake("w2", summary=RESULT, queued=41, delivered=50 if delivered else None),
    )


# --- where the meanings part ------------------------------------------------------------


def test_a_queued_wake_under_delivery_wake_reached_by_the_contract_not_as_the_operator_sees_it():
    snap = failed_then_restarted()
    t = the_task(snap)
    latest = reading.latest_result_by_contract(snap, t)
    assert latest.id == "r2"
    assert reading.reached_by_contract(snap, t, latest.summary)
    assert reading.reaching_wake_by_contract(snap, t, latest.summary).id == "w2"
    assert reading.latest_result_as_operator_sees_it(snap, t).id == "r2"
    assert not reading.reached_as_operator_sees_it(snap, t, latest)
    assert not reading.latest_reach_as_operator_sees_it(snap, t).reached
    assert "by wake only" in reading.latest_reach_as_operator_sees_it(snap, t).how
    # A task wake of the task was delivered (the failure's): the "delivered" meaning.
    assert reading.delivered_to_parent(snap, t)


def test_once_taken_the_wake_reached_it_as_the_operator_sees_it_too():
    snap = failed_then_restarted(delivered=True)
    latest = reading.latest_result_by_contract(snap, the_task(snap))
    assert reading.reached_as_operator_sees_it(snap, the_task(snap), latest)
    assert reading.latest_reach_as_operator_sees_it(snap, the_task(snap)).how == "by wake w2"


def test_without_delivery_wake_a_queued_wake_reached_it_in_both_meanings():
    snap = snapshot(
        task(reports=[report("completed", 20, summary=INTERIM)]),
        run("r1", 1, finished=10, summary=INTERIM),
        run("r2", 2, trigger=("restart", "r1"), requested=21, finished=40, summary=RESULT),
        wake("w2", summary=RESULT, queued=41),
    )
    t, r2 = the_task(snap), snap.runs["r2"]
    assert reading.reached_by_contract(snap, t, RESULT)
    assert reading.reached_as_operator_sees_it(snap, t, r2)
    how = reading.latest_reach_as_operator_sees_it(snap, t).how
    assert how == "by wake w2, queued for the parent, which has not taken it yet"


def test_a_terminal_report_hands_its_text_as_the_operator_sees_it_not_by_the_contract():
    snap = snapshot(
        task(reports=[report("completed", 20, summary=RESULT)]),
        run("r1", 1, finished=10, summary=RESULT),
    )
    t = the_task(snap)
    assert not reading.reached_by_contract(snap, t, RESULT)  # no wake carried it
    assert reading.handed_text_by_contract(snap, t, RESULT)  # the report handed it
    assert reading.reached_as_operator_sees_it(snap, t, snap.runs["r1"])
    assert reading.latest_reach_as_operator_sees_it(snap, t).how == "by the report completed"


def test_a_report_ended_by_a_restart_hands_nothing_as_the_operator_sees_it():
    snap = snapshot(
        task(reports=[report("cancelled", 20, summary=RESULT, cause="restart")]),
        run("r1", 1, finished=10, summary=RESULT),
    )
    [handing] = reading.read(snap, the_task(snap)).handings
    assert not handing.reached_as_operator_sees_it
    assert "restart" in handing.why_not


def test_a_later_run_delivered_by_hand_is_the_latest_result_as_the_operator_sees_it():
    # Run 2 was started by a message (a follow-up, not the task's own): the contract's
    # latest result stays run 1's; the parent holds run 2's, delivered by hand.
    header = delivery_text(Task(task_id=TASK, title="Suite"), "r2", RESULT)
    snap = snapshot(
        task(reports=[report("completed", 20, summary=INTERIM)]),
        run("r1", 1, finished=10, summary=INTERIM),
        run("r2", 2, trigger=("message", None), requested=30, finished=40, summary=RESULT),
        wake("m1", source=("manual", TASK), summary=header, queued=50),
    )
    t = the_task(snap)
    assert reading.latest_result_by_contract(snap, t).id == "r1"
    assert reading.latest_result_as_operator_sees_it(snap, t).id == "r2"
    reach = reading.latest_reach_as_operator_sees_it(snap, t)
    assert reach.reached and reach.by_hand and reach.how == "by delivery by hand (wake m1)"
    assert reading.reached_by_contract(snap, t, RESULT)  # the manual wake contains it


# --- by the contract's words -------------------------------------------------------------


def test_any_task_wake_carrying_the_text_reaches_the_parent_but_another_threads_does_not():
    snap = snapshot(
        task(),
        wake("w1", source=("task", "task:follow-up"), summary=" Suite green:\n412 passed. "),
        wake("w2", to="thread:elsewhere", summary="Elsewhere."),
    )
    t = the_task(snap)
    assert reading.reaching_wake_by_contract(snap, t, RESULT).id == "w1"
    assert not reading.reached_by_contract(snap, t, "Elsewhere.")


def test_the_latest_result_is_the_highest_owned_run_with_a_text():
    snap = snapshot(
        task(),
        run("r1", 1, finished=10, summary=RESULT),
        run("r2", 2, trigger=("restart", "r1"), requested=11, finished=20, summary="  "),
        run("r3", 3, trigger=("message", None), requested=21, finished=30, summary="A reply."),
    )
    assert reading.latest_result_by_contract(snap, the_task(snap)).id == "r1"


def test_the_result_run_is_the_named_one_else_the_highest_with_the_reports_text():
    views = [
        run("r1", 1, finished=10, summary=INTERIM),
        run("r2", 2, trigger=("restart", "r1"), requested=11, finished=20, summary=INTERIM),
    ]
    by_text = snapshot(task(reports=[report("completed", 30, summary=INTERIM)]), *views)
    assert reading.result_run_by_contract(by_text, the_task(by_text)).id == "r2"
    named = snapshot(
        task(reports=[report("completed", 30, summary=INTERIM, result_run="r9")]), *views
    )
    assert reading.result_run_by_contract(named, the_task(named)).ordinal is None  # placeholder


def test_handings_are_the_tasks_wakes_by_queue_time_then_its_terminal_reports():
    snap = snapshot(
        task(
            reports=[report("running", 5, summary="going"), report("completed", 20, summary=RESULT)]
        ),
        run("r1", 1, finished=10, summary=RESULT),
        wake("w2", summary=RESULT, queued=22, delivered=23),
        wake("w1", summary=INTERIM, queued=21),
        wake("m1", source=("manual", TASK), queued=30),  # carried no text
        wake("b1", source=("background", "bg"), summary=RESULT, queued=24),
    )
    t = the_task(snap)
    handings = reading.read(snap, t).handings
    assert [(h.how, h.via, h.delivered) for h in handings] == [
        ("wake", "wake w1", False),
        ("wake", "wake w2", True),
        ("by hand", "delivery by hand (wake m1)", False),
        ("report", "report completed", False),
    ]
    assert [h.run.id if h.run else None for h in handings] == [None, "r1", None, "r1"]
    assert [h.via for h in reading.handed_by_contract(snap, t)] == [
        "wake w1",
        "wake w2",
        "report completed",
    ]
    assert reading.deliveries_by_hand(snap, t) == []
    assert [h.via for h in reading.deliveries_by_hand(snap, t, any_text=True)] == [
        "delivery by hand (wake m1)"
    ]


# --- delivered (§4's last two notions) ----------------------------------------------------


def test_delivered_needs_a_task_wake_taken_or_a_delivery_by_hand():
    queued = snapshot(task(), wake("w1", summary=RESULT, queued=10))
    assert not reading.delivered_to_parent(queued, the_task(queued))
    taken = snapshot(task(), wake("w1", queued=10, delivered=11))  # whatever its text
    assert reading.task_wake_delivered(taken, the_task(taken))
    by_hand = snapshot(task(), wake("m1", source=("manual", TASK), queued=10))
    assert reading.delivered_to_parent(by_hand, the_task(by_hand))


def test_without_a_latest_result_the_parent_holds_it_once_delivered():
    snap = snapshot(
        task(reports=[report("failed", 20, summary=OVERLOADED, delivery="wake")]),
        run("r1", 1, finished=10, status="failed", summary=""),
        wake("w1", summary=OVERLOADED, queued=21),
    )
    t = the_task(snap)
    assert reading.latest_result_by_contract(snap, t) is None
    assert not reading.holds_result_as_operator_sees_it(snap, t)
    delivered = snapshot(
        *snap.tasks.values(), *snap.runs.values(), wake("w1", queued=21, delivered=22)
    )
    assert reading.holds_result_as_operator_sees_it(delivered, the_task(delivered))


# --- computed once --------------------------------------------------------------------------


def test_the_reading_is_computed_once_per_task_and_snapshot():
    snap = failed_then_restarted()
    t = the_task(snap)
    first = reading.read(snap, t)
    reading.reached_as_operator_sees_it(snap, t, snap.runs["r2"])
    reading.latest_result_by_contract(snap, t)
    assert reading.read(snap, t) is first
    assert snap.memo[("reading", TASK)] is first


def test_a_result_queued_and_not_taken_is_named_by_its_wake_until_the_parent_takes_it():
    waiting = failed_then_restarted()
    r2 = waiting.runs["r2"]
    assert reading.queued_not_taken(waiting, the_task(waiting), r2).id == "w2"
    taken = failed_then_restarted(delivered=True)
    assert reading.queued_not_taken(taken, the_task(taken), taken.runs["r2"]) is None
    # Run 1's failure was taken: nothing of it waits.
    assert reading.queued_not_taken(waiting, the_task(waiting), waiting.runs["r1"]) is None
