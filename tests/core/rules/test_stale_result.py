"""stale_result: the parent was handed a text that is not the latest result (contract §5)."""

from supervisor.core.rules import stale_result as rule
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


def later_run(summary="final"):
    """Run 1 says "interim", starts an item whose end wakes run 2 with `summary`."""
    return (
        run("r1", 1, finished=60, summary="interim"),
        item("bg", started=30, finished=200),
        run("r2", 2, trigger=("background", "bg"), requested=201, finished=260, summary=summary),
    )


def test_opens_when_the_handed_text_is_not_the_latest_result():
    # seed001: the parent got "WAITING"; the latest result is run 2's "FINAL".
    assert open_on(task(), *later_run(), wake("w", summary="interim", queued=100)) == [TASK]


def test_a_terminal_report_hands_its_summary():
    views = task(reports=[report("completed", 100, summary="interim")]), *later_run()
    assert open_on(*views) == [TASK]


def test_a_report_that_is_not_terminal_hands_nothing():
    views = task(reports=[report("running", 100, summary="interim")]), *later_run()
    assert open_on(*views) == []


def test_not_open_when_nothing_was_handed():
    assert open_on(task(), *later_run()) == []


def test_not_open_when_the_latest_result_is_among_the_texts_handed():
    # seed000 (review-a/b): the report and the wake handed the run's own review text.
    # seed002 (a1): the failed report handed run 1's text, which is a1's latest result
    # (run 2 was a message run, not owned): not stale.
    views = (
        task(),
        *later_run(),
        wake("w1", summary="interim", queued=100),
        wake("w2", summary=" final ", queued=300),
    )
    assert open_on(*views) == []


def test_not_open_without_a_latest_result():
    views = task(), run("r1", 1), wake("w", summary="interim", queued=100)
    assert open_on(*views) == []


def test_resolves_when_the_latest_result_reached_the_parent_by_hand():
    views = (
        task(),
        *later_run(),
        wake("w", summary="interim", queued=100),
        wake("manual", source=("manual", TASK), summary="Delivered by hand:\nfinal", queued=400),
    )
    assert open_on(*views) == []


def test_handing_to_another_thread_does_not_count():
    views = task(), *later_run(), wake("w", to=CHILD, summary="interim", queued=100)
    assert open_on(*views) == []


def test_evidence_names_the_handings_and_the_latest_run():
    views = task(reports=[report("completed", 100, summary="interim")]), *later_run()
    [finding] = rule.findings(snapshot(*views), SETTINGS, NOW)
    assert finding.evidence["events"] == ["report/completed@100", "r2/finished"]
    assert finding.evidence["latest_result"] == "final"
