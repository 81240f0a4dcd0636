"""misrouted_wake: a task wake of a known task went to a thread that is neither its
parent nor the parent of a follow-up of it, and the parent lacks the result."""

from supervisor.core.rules import misrouted_wake as rule
from tests.support.snapshots import (
    CHILD,
    PARENT,
    SETTINGS,
    TASK,
    at,
    report,
    run,
    snapshot,
    task,
    unknown_task,
    wake,
)

GRACE = SETTINGS.delivery_grace
OTHER = "thread:other"
RESULT = "Port done: suite green."


def finished(summary=RESULT):
    return run("r1", 1, requested=0, finished=50, summary=summary)


def astray(id="w1", **fields):
    fields = {"to": OTHER, "summary": RESULT, "queued": 100, **fields}
    return wake(id, **fields)


def open_at(seconds, *views):
    return [f.subject_id for f in rule.findings(snapshot(*views), SETTINGS, at(seconds))]


def sick():
    return (task(reports=[report("completed", 60, summary=RESULT, delivery="wake")]), finished())


def test_not_open_just_before_delivery_grace():
    assert open_at(100 + GRACE - 1, *sick(), astray()) == []


def test_opens_at_delivery_grace_on_the_task_with_the_wake_and_both_threads():
    [finding] = rule.findings(snapshot(*sick(), astray()), SETTINGS, at(100 + GRACE))
    assert (finding.subject_type, finding.subject_id) == ("task", TASK)
    assert finding.evidence["events"] == ["w1/queued"]
    assert finding.evidence["targets"] == [OTHER]
    assert finding.evidence["parent_thread"] == PARENT
    assert OTHER in finding.evidence["text"] and PARENT in finding.evidence["text"]
    assert "has not reached the parent" in finding.evidence["text"]


def test_next_change_is_when_delivery_grace_ends():
    due = rule.due_times(snapshot(*sick(), astray()), SETTINGS, at(100))
    assert due == {("task", TASK): at(100 + GRACE)}


def test_a_wake_to_the_parent_is_not_misrouted():
    assert open_at(3600, *sick(), astray(to=PARENT, delivered=101)) == []


def test_the_parent_read_the_result_is_not_misrouted():
    # "The parent read the result": a task wake to the parent, delivered to the run that read it.
    views = *sick(), astray(to=PARENT, delivered=101), run("p2", 2, thread=PARENT, requested=101)
    assert open_at(3600, *views) == []


def test_a_grandchilds_notice_goes_to_its_own_parent():
    # G's wake to T's child thread: G's parent thread, so fine for G; T has no wake astray.
    views = (
        *sick(),
        astray(to=PARENT, delivered=101),
        task("task:g", parent=CHILD, child="thread:g", delegated=10),
        wake("wg", to=CHILD, source=("task", "task:g"), source_thread="thread:g", queued=40),
    )
    assert open_at(3600, *views) == []


def test_a_wake_to_the_parent_of_a_follow_up_is_not_misrouted():
    follow_up = task("task:f", parent=OTHER, child=CHILD, delegated=90, follow_up_of=TASK)
    assert open_at(3600, *sick(), astray(), follow_up) == []


def test_a_task_that_follows_up_another_does_not_bless_the_wake():
    # The follow-up relation runs from the later task to T: a task T follows up is no follow-up.
    earlier = task("task:f", parent=OTHER, child="thread:f", delegated=0)
    views = (
        task(follow_up_of="task:f", reports=[report("completed", 60, delivery="wake")]),
        finished(),
        astray(),
        earlier,
    )
    assert open_at(3600, *views) == [TASK]


def test_manual_wakes_are_not_task_wakes():
    # A continue sent by hand goes to the child thread, a delivery by hand to the parent.
    views = *sick(), wake("m1", to=CHILD, source=("manual", TASK), summary="go on", queued=100)
    assert open_at(3600, *views) == []


def test_supervisors_continue_to_another_thread_is_not_a_task_wake():
    views = *sick(), wake("m1", to=OTHER, source=("manual", TASK), summary="go on", queued=100)
    assert open_at(3600, *views) == []


def test_a_wake_naming_an_unknown_task_is_orphan_wakes_business():
    views = task(), astray(source=("task", "task:ghost")), unknown_task("task:ghost")
    assert open_at(3600, *views) == []


def test_a_progress_notice_sent_astray_carries_no_result():
    assert open_at(3600, *sick(), astray(outcome="updated")) == []


def test_resolves_when_the_latest_result_reaches_the_parent():
    views = *sick(), astray(), wake("w2", summary=RESULT, queued=400, delivered=401)
    assert open_at(3600, *views) == []


def test_a_queued_wake_that_is_not_delivered_leaves_it_open_when_results_go_by_wake():
    views = *sick(), astray(), wake("w2", summary=RESULT, queued=400)
    assert open_at(3600, *views) == [TASK]


def test_resolves_on_a_delivery_by_hand_of_the_latest_result():
    hand = wake("m1", source=("manual", TASK), summary=f"[by hand]\n{RESULT}", queued=400)
    assert open_at(3600, *sick(), astray(), hand) == []


def test_a_terminal_report_that_handed_the_result_means_the_parent_holds_it():
    # Without `delivery: "wake"` the report's text reached the parent (core.handover).
    views = task(reports=[report("completed", 60, summary=RESULT)]), finished(), astray()
    assert open_at(3600, *views) == []


def test_a_copy_of_a_text_the_parent_holds_sent_astray_does_not_count():
    # Run 1's text reached the parent; the copy astray is not what the parent lacks. Run 2's
    # later result that never reached it is undelivered_result's business.
    views = (
        task(reports=[report("completed", 60, summary="interim", delivery="wake")]),
        run("r1", 1, requested=0, finished=50, summary="interim"),
        run("r2", 2, trigger=("restart", "r1"), requested=70, finished=90, summary=RESULT),
        wake("w0", summary="interim", queued=61, delivered=62),
        astray(summary="interim"),
    )
    assert open_at(3600, *views) == []


def test_without_a_latest_result_a_delivery_by_hand_resolves_it():
    failed = run("r1", 1, requested=0, finished=50, status="failed", summary="")
    base = task(reports=[report("failed", 60, delivery="wake")]), failed
    assert open_at(3600, *base, astray(summary=None, outcome="failed")) == [TASK]
    hand = wake("m1", source=("manual", TASK), queued=400)
    assert open_at(3600, *base, astray(summary=None, outcome="failed"), hand) == []
    told = wake("w2", outcome="failed", queued=400, delivered=401)
    assert open_at(3600, *base, astray(summary=None, outcome="failed"), told) == []


def test_one_finding_per_task_with_every_wake_past_its_grace():
    views = *sick(), astray(), astray("w2", to="thread:third", queued=150)
    [finding] = rule.findings(snapshot(*views), SETTINGS, at(150 + GRACE))
    assert finding.evidence["wakes"] == ["w1", "w2"]
    assert finding.evidence["targets"] == [OTHER, "thread:third"]
    [early] = rule.findings(snapshot(*views), SETTINGS, at(100 + GRACE))
    assert early.evidence["wakes"] == ["w1"]
