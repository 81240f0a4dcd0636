"""never_delivered: a terminal result that no wake, read or delivery brought to the
parent, while no run of the parent is under way (a contract extension)."""

from supervisor.core.rules import never_delivered as rule
from tests.support.snapshots import (
    PARENT,
    SETTINGS,
    TASK,
    at,
    report,
    run,
    snapshot,
    subjects,
    task,
    wake,
)

GRACE = SETTINGS.delivery_grace
DONE = 100  # the report turned terminal


def views(*extra, delivery="wake", status="completed"):
    return (
        task(reports=[report(status, DONE, summary="Lint clean.", delivery=delivery)]),
        run("p1", 1, thread=PARENT, trigger=("message", None), finished=30),
        run("r1", 1, finished=90, summary="Lint clean."),
        *extra,
    )


def open_at(seconds, *views):
    return subjects(rule.findings(snapshot(*views), SETTINGS, at(seconds)))


def test_opens_after_the_grace_when_nothing_brought_the_result():
    assert open_at(DONE + GRACE - 1, *views()) == []
    assert open_at(DONE + GRACE, *views()) == [TASK]


def test_says_when_it_will_open():
    due = rule.due_times(snapshot(*views()), SETTINGS, at(DONE))
    assert due == {("task", TASK): at(DONE + GRACE)}


def test_any_failed_or_cancelled_result_counts_too():
    assert open_at(DONE + GRACE, *views(status="failed")) == [TASK]


def test_only_where_the_orchestrator_hands_results_by_wakes():
    # Elsewhere a terminal report is itself the handing (contract §4).
    assert open_at(DONE + GRACE * 10, *views(delivery=None)) == []


def test_a_delivered_task_wake_a_read_or_a_manual_delivery_keeps_it_closed():
    delivered = wake("w1", summary="Lint clean.", queued=DONE + 1, delivered=DONE + 2)
    manual = wake("m1", source=("manual", TASK), summary="[Supervisor] Lint clean.", queued=DONE)
    assert open_at(DONE + GRACE * 10, *views(delivered)) == []
    assert open_at(DONE + GRACE * 10, *views(manual)) == []


def test_a_wake_queued_but_never_delivered_is_no_delivery():
    # Its run was cancelled before it started: the parent never took it.
    queued = wake("w1", summary="Lint clean.", queued=DONE + 1)
    cancelled = run(
        "p2",
        2,
        thread=PARENT,
        trigger=("wake", "w1"),
        requested=DONE + 1,
        finished=DONE + 5,
        status="cancelled",
    )
    assert open_at(DONE + 5 + GRACE, *views(queued, cancelled)) == [TASK]


def test_waits_while_a_parent_run_is_under_way_and_counts_from_its_end():
    live = run("p2", 2, thread=PARENT, trigger=("message", None), requested=DONE + 10)
    assert open_at(DONE + GRACE * 10, *views(live)) == []
    ended = run(
        "p2", 2, thread=PARENT, trigger=("message", None), requested=DONE + 10, finished=DONE + 200
    )
    assert open_at(DONE + 200 + GRACE - 1, *views(ended)) == []
    assert open_at(DONE + 200 + GRACE, *views(ended)) == [TASK]


def test_another_tasks_wake_is_not_this_ones_delivery():
    other = wake(
        "w1", source=("task", "task:other"), summary="Lint clean.", queued=DONE, delivered=DONE + 1
    )
    assert open_at(DONE + GRACE, *views(other)) == [TASK]


def test_the_evidence_carries_the_orchestrators_own_record_and_its_cap():
    """T3 #12285: a third wave of one delegating run's results stays pending, no wake."""
    capped = task(
        reports=[
            report(
                "completed",
                DONE,
                summary="Lint clean.",
                delivery="wake",
                delivery_record="pending",
                settled_deliveries=2,
            )
        ]
    )
    [finding] = rule.findings(snapshot(capped, *views()[1:]), SETTINGS, at(DONE + GRACE))
    assert finding.evidence["delivery_record"] == "pending"
    assert finding.evidence["settled_deliveries"] == 2
    assert "reserves no more" in finding.evidence["why"]
    # Without a record, the evidence says nothing of one.
    [plain] = rule.findings(snapshot(*views()), SETTINGS, at(DONE + GRACE))
    assert "delivery_record" not in plain.evidence
