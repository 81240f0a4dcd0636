"""stuck: an unfinished task whose owned work went quiet, or whose child never woke (§5)."""

from supervisor.core.rules import stuck as rule
from tests.support.snapshots import (
    CHILD,
    SETTINGS,
    TASK,
    at,
    item,
    minutes,
    report,
    run,
    snapshot,
    subjects,
    task,
    wake,
)

STUCK_AFTER = SETTINGS.stuck_after
WAKE_START = SETTINGS.wake_start_timeout


def open_at(seconds, *views):
    return subjects(rule.findings(snapshot(*views), SETTINGS, at(seconds)))


def running(when=10):
    return report("running", when)


# (a) nothing owned happened for stuck_after


def test_not_open_just_before_stuck_after():
    assert open_at(STUCK_AFTER - 1, task(reports=[running()]), run("r1", 1)) == []


def test_opens_exactly_at_stuck_after():
    assert open_at(STUCK_AFTER, task(reports=[running()]), run("r1", 1)) == [TASK]


def test_a_task_without_a_report_can_be_stuck():
    assert open_at(STUCK_AFTER, task(), run("r1", 1)) == [TASK]


def test_resolves_when_the_report_is_terminal():
    views = task(reports=[running(), report("failed", 20)]), run("r1", 1)
    assert open_at(STUCK_AFTER, *views) == []


def test_run_activity_restarts_the_idle_clock():
    views = task(reports=[running()]), run("r1", 1, activity=600)
    assert open_at(600 + STUCK_AFTER - 1, *views) == []
    assert open_at(600 + STUCK_AFTER, *views) == [TASK]


def test_the_end_of_an_owned_run_restarts_the_idle_clock():
    views = task(reports=[running()]), run("r1", 1, finished=900)
    assert open_at(900 + STUCK_AFTER - 1, *views) == []


def test_activity_of_a_follow_up_run_does_not_count():
    views = (
        task(reports=[running()]),
        run("r1", 1, finished=10),
        run("r2", 2, trigger=("message", None), requested=600, activity=900),
    )
    assert open_at(10 + STUCK_AFTER, *views) == [TASK]


def test_clock_stops_while_an_awaited_item_is_unfinished():
    # healthy-awaited-background: run 1 ended at 08:01:02 with the report "waiting", but CI
    # (awaited) ran until 08:15:00: waiting on it is not idleness.
    views = task(reports=[running(70)]), run("r1", 1, finished=62), item("ci", started=60)
    assert open_at(62 + STUCK_AFTER, *views) == []
    assert open_at(62 + 2 * STUCK_AFTER - 1, *views) == []


def test_a_silent_item_no_longer_stops_the_clock():
    # An item that shows as open while nothing happens on its thread for
    # stuck_after (silent_background_item) stops the clock no more: it runs from then.
    views = task(reports=[running(70)]), run("r1", 1, finished=62), item("ci", started=60)
    assert open_at(62 + 2 * STUCK_AFTER, *views) == [TASK]
    assert open_at(minutes(600), *views) == [TASK]


def test_anything_on_the_items_thread_keeps_the_wait():
    # A follow-up run of the child thread is not owned (no happening of T), but it is
    # something on the item's thread: the item is not silent, so the wait goes on.
    views = (
        task(reports=[running(70)]),
        run("r1", 1, finished=62),
        item("ci", started=60),
        run("r2", 2, trigger=("message", None), requested=1500, activity=3000),
    )
    assert open_at(3000 + STUCK_AFTER - 1, *views) == []
    assert open_at(3000 + 2 * STUCK_AFTER - 1, *views) == []
    assert open_at(3000 + 2 * STUCK_AFTER, *views) == [TASK]


def test_next_change_is_when_the_silent_item_stops_the_wait_and_the_clock_runs_out():
    views = task(reports=[running(70)]), run("r1", 1, finished=62), item("ci", started=60)
    assert rule.due_times(snapshot(*views), SETTINGS, at(100)) == {
        ("task", TASK): at(62 + 2 * STUCK_AFTER)
    }


def test_a_finished_item_stops_the_clock_until_its_end():
    views = (
        task(reports=[running(70)]),
        run("r1", 1, finished=62),
        item("ci", started=60, finished=4000),
    )
    assert open_at(4000 + STUCK_AFTER - 1, *views) == []
    assert open_at(4000 + STUCK_AFTER, *views) == [TASK]


def test_an_item_not_awaited_does_not_stop_the_clock():
    views = (
        task(reports=[running(70)]),
        run("r1", 1, finished=62),
        item("ci", started=60, awaited=False),
    )
    assert open_at(62 + STUCK_AFTER, *views) == [TASK]


def test_clock_stops_while_a_delegated_task_has_not_ended():
    # seed000 (retry-port): run 1 ended at 22:42:00 with "waiting"; the suite and the two
    # reviews it delegated were open until the task was reported completed: never stuck.
    views = (
        task(reports=[running(130)]),
        run("r1", 1, finished=120),
        task("task:review", parent=CHILD, child="thread:review", parent_run="r1", delegated=80),
    )
    assert TASK not in open_at(minutes(600), *views)  # (the silent review itself is stuck)


def test_clock_restarts_when_the_delegated_task_ends_not_before():
    # The review's terminal report is not an owned happening, but it ends the wait: the
    # idle clock runs from then, not from the last owned happening (run 1's end at 120).
    review = task(
        "task:review",
        parent=CHILD,
        child="thread:review",
        parent_run="r1",
        delegated=80,
        reports=[report("completed", 1000)],
    )
    views = task(reports=[running(130)]), run("r1", 1, finished=120), review
    assert open_at(1000 + STUCK_AFTER - 1, *views) == []
    assert open_at(1000 + STUCK_AFTER, *views) == [TASK]


def test_next_change_is_when_the_idle_clock_reaches_stuck_after():
    views = task(reports=[running()]), run("r1", 1, activity=600)
    assert min(rule.due_times(snapshot(*views), SETTINGS, at(700)).values()) == at(
        600 + STUCK_AFTER
    )


def test_a_quiet_run_under_stuck_after_is_not_stuck():
    # seed000 (review-a): started 22:41:20.1, next owned happening its end 13.7 min later.
    views = (
        task(reports=[running()]),
        run("r1", 1, finished=minutes(13.7)),
    )
    assert open_at(minutes(13.7), *views) == []


def test_idle_reached_at_skips_the_waits():
    waits = [(at(100), at(500)), (at(300), at(700)), (at(2000), at(2100))]
    # idle 0-100 (100 s), waiting 100-700, idle 700-2000 (1300 s), then 600 s more from 2100.
    assert rule.idle_reached_at(at(0), waits, 2000) == at(2700)


def test_evidence_names_the_last_owned_happening():
    views = task(reports=[running()]), run("r1", 1, activity=600)
    [finding] = rule.findings(snapshot(*views), SETTINGS, at(600 + STUCK_AFTER))
    assert finding.evidence["events"] == ["r1/activity"]


# (b) a wake for the child thread did not start it


def busy():
    """A task whose run ended at 400: (a) would not open before 400 + stuck_after."""
    return task(reports=[running()]), run("r1", 1, finished=400)


def test_wake_not_started_just_before_wake_start_timeout():
    views = *busy(), wake("w", to=CHILD, source=("message", None), queued=500)
    assert open_at(500 + WAKE_START - 1, *views) == []


def test_wake_not_started_opens_exactly_at_wake_start_timeout():
    views = *busy(), wake("w", to=CHILD, source=("message", None), queued=500)
    assert open_at(500 + WAKE_START, *views) == [TASK]


def test_wake_that_started_a_run_is_fine():
    views = (
        *busy(),
        wake("w", to=CHILD, source=("message", None), queued=500),
        run("r2", 2, trigger=("wake", "w"), requested=501),
    )
    assert open_at(500 + WAKE_START, *views) == []


def test_delivered_wake_is_fine():
    views = *busy(), wake("w", to=CHILD, source=("message", None), queued=500, delivered=501)
    assert open_at(500 + WAKE_START, *views) == []


def test_wake_queued_during_a_run_is_judged_from_that_runs_end():
    views = (
        task(reports=[running()]),
        run("r1", 1, finished=400),
        run("r2", 2, trigger=("message", None), requested=450, finished=700),
        wake("w", to=CHILD, source=("message", None), queued=500),
    )
    assert open_at(700 + WAKE_START - 1, *views) == []
    assert open_at(700 + WAKE_START, *views) == [TASK]


def test_wake_queued_during_an_unfinished_run_waits_for_its_end():
    views = (
        task(reports=[running()]),
        run("r1", 1, activity=1000),
        wake("w", to=CHILD, source=("message", None), queued=500),
    )
    assert open_at(1000, *views) == []
    assert min(rule.due_times(snapshot(*views), SETTINGS, at(1000)).values()) == at(
        1000 + STUCK_AFTER
    )


def test_wake_to_another_thread_does_not_count():
    views = *busy(), wake("w", to="thread:elsewhere", source=("message", None), queued=500)
    assert open_at(500 + WAKE_START, *views) == []


def test_next_change_is_when_the_wake_start_timeout_ends():
    views = *busy(), wake("w", to=CHILD, source=("message", None), queued=500)
    assert min(rule.due_times(snapshot(*views), SETTINGS, at(500)).values()) == at(500 + WAKE_START)


def test_evidence_names_the_unstarted_wake():
    views = *busy(), wake("w", to=CHILD, source=("message", None), queued=500)
    [finding] = rule.findings(snapshot(*views), SETTINGS, at(500 + WAKE_START))
    assert finding.evidence["events"] == ["w/queued"]


def test_an_owned_items_end_restarts_the_idle_clock_even_when_not_awaited():
    views = (
        task(reports=[running(70)]),
        run("r1", 1, finished=62),
        item("bg", started=60, finished=900, awaited=False),
    )
    assert open_at(900 + STUCK_AFTER - 1, *views) == []
    assert open_at(900 + STUCK_AFTER, *views) == [TASK]


def test_delegating_a_task_from_an_owned_run_restarts_the_idle_clock():
    review = task(
        "task:review",
        parent=CHILD,
        child="thread:review",
        parent_run="r1",
        delegated=100,
        reports=[report("completed", 100)],
    )
    views = task(reports=[running()]), run("r1", 1, activity=50), review
    assert TASK not in open_at(100 + STUCK_AFTER - 1, *views)
    assert TASK in open_at(100 + STUCK_AFTER, *views)
