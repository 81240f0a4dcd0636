"""silent_background_item: an item the task waits on shows as open while nothing at all
happens on its thread for stuck_after."""

from supervisor.core.rules import silent_background_item as rule
from tests.support.snapshots import (
    CHILD,
    PARENT,
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

QUIET = SETTINGS.stuck_after


def open_at(seconds, *views):
    return subjects(rule.findings(snapshot(*views), SETTINGS, at(seconds)))


def waiting(*more):
    """Run 1 starts the monitor at 60 and ends at 62; the task says it is waiting."""
    return (
        task(reports=[report("running", 70)]),
        run("r1", 1, finished=62),
        item("monitor", started=60),
        *more,
    )


def test_opens_once_the_thread_has_been_quiet_for_stuck_after():
    assert open_at(62 + QUIET - 1, *waiting()) == []
    assert open_at(62 + QUIET, *waiting()) == [TASK]


def test_the_evidence_names_the_item_and_the_last_thing_on_its_thread():
    (finding,) = rule.findings(snapshot(*waiting()), SETTINGS, at(62 + QUIET))
    assert finding.evidence["items"] == ["monitor"]
    assert finding.evidence["quiet_since"] == at(62).isoformat()
    assert finding.evidence["events"] == ["monitor/started", "r1/finished"]


def test_resolves_when_the_item_finishes():
    views = task(reports=[report("running", 70)]), run("r1", 1, finished=62)
    assert open_at(5000, *views, item("monitor", started=60, finished=4000)) == []


def test_resolves_when_anything_happens_on_its_thread():
    # Not owned (a message-started run), yet it is on the item's thread.
    later = run("r2", 2, trigger=("message", None), requested=3000, finished=3010)
    assert open_at(3010 + QUIET - 1, *waiting(later)) == []
    assert open_at(3010 + QUIET, *waiting(later)) == [TASK]


def test_a_wake_queued_to_its_thread_counts():
    progress = wake("w1", to=CHILD, source=("background", "monitor"), queued=1000)
    assert open_at(1000 + QUIET - 1, *waiting(progress)) == []


def test_a_task_delegated_from_its_thread_counts():
    sub = task("task:sub", parent=CHILD, child="thread:sub", parent_run="r1", delegated=1000)
    assert TASK not in open_at(1000 + QUIET - 1, *waiting(sub))


def test_what_happens_elsewhere_does_not_count():
    parent_run = run("p1", 1, thread=PARENT, trigger=("message", None), requested=1000)
    assert open_at(62 + QUIET, *waiting(parent_run)) == [TASK]


def test_an_item_not_awaited_is_left_to_stuck():
    views = (
        task(reports=[report("running", 70)]),
        run("r1", 1, finished=62),
        item("server", started=60, awaited=False),
    )
    assert open_at(62 + QUIET, *views) == []


def test_a_terminal_report_is_left_to_the_other_kinds():
    for status in ("completed", "failed", "cancelled", "interrupted"):
        views = (
            task(reports=[report(status, 70)]),
            run("r1", 1, finished=62),
            item("monitor", started=60),
        )
        assert open_at(62 + QUIET, *views) == [], status


def test_an_item_of_a_run_not_owned_does_not_count():
    views = (
        task(reports=[report("running", 70)]),
        run("r1", 1, finished=62),
        run("r2", 2, trigger=("message", None), requested=63, finished=64),
        item("monitor", run="r2", started=63),
    )
    assert open_at(64 + QUIET, *views) == []


def test_due_when_the_quiet_reaches_stuck_after():
    due = rule.due_times(snapshot(*waiting()), SETTINGS, at(100))
    assert due == {("task", TASK): at(62 + QUIET)}
    assert rule.due_times(snapshot(*waiting()), SETTINGS, at(62 + QUIET)) == {}


def test_no_due_time_without_an_open_item():
    views = task(reports=[report("running", 70)]), run("r1", 1, finished=62)
    assert rule.due_times(snapshot(*views), SETTINGS, at(100)) == {}
