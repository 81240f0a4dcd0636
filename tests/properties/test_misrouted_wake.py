"""misrouted_wake over generated histories of one task's wakes: wakes to the
parent or a follow-up's parent never open it; once open it stays open as time passes,
and the result reaching the parent, or a follow-up under each thread a wake went to,
closes it; its due time is when it opens; the order the snapshot holds views in does
not matter."""

from hypothesis import given
from hypothesis import strategies as st

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
    wake,
)

RESULT = "Migration applied: 3 indexes added."
ELSEWHERE = ("thread:docs", "thread:bench", "thread:review")
GRACE = SETTINGS.delivery_grace


def base(delivery):
    return (
        task(reports=[report("completed", 60, summary=RESULT, delivery=delivery)]),
        run("r1", 1, requested=0, finished=50, summary=RESULT),
    )


wakes = st.lists(
    st.tuples(
        st.sampled_from((PARENT, *ELSEWHERE)),
        st.sampled_from((RESULT, "interim", None)),
        st.sampled_from(("completed", "failed", "updated")),
        st.integers(61, 900),
        st.booleans(),
    ),
    max_size=5,
)


def built(specs):
    return [
        wake(
            f"w{n}",
            to=target,
            summary=summary,
            outcome=outcome,
            queued=queued,
            delivered=queued + 1 if delivered else None,
        )
        for n, (target, summary, outcome, queued, delivered) in enumerate(specs)
    ]


def follow_ups(threads):
    return [
        task(f"task:f{n}", parent=thread, child=CHILD, delegated=61, follow_up_of=TASK)
        for n, thread in enumerate(sorted(threads))
    ]


def is_open(views, seconds):
    return [f.subject_id for f in rule.findings(snapshot(*views), SETTINGS, at(seconds))]


@given(wakes, st.sampled_from(("wake", None)), st.integers(0, 2000))
def test_wakes_to_the_parent_or_a_follow_ups_parent_never_open_it(specs, delivery, seconds):
    views = [*base(delivery), *built(specs), *follow_ups({t for t, *_ in specs} - {PARENT})]
    assert is_open(views, seconds) == []


@given(wakes, st.integers(0, 2000), st.integers(1, 600))
def test_once_open_it_stays_open_until_an_event_closes_it(specs, seconds, later):
    views = [*base("wake"), *built(specs)]
    if is_open(views, seconds):
        assert is_open(views, seconds + later) == [TASK]


@given(wakes, st.integers(0, 2000))
def test_the_result_reaching_the_parent_or_follow_ups_close_it(specs, seconds):
    views = [*base("wake"), *built(specs)]
    if not is_open(views, seconds):
        return
    reached = wake("w-parent", summary=RESULT, queued=seconds, delivered=seconds)
    by_hand = wake("m1", source=("manual", TASK), summary=f"[by hand]\n{RESULT}", queued=seconds)
    assert is_open([*views, reached], seconds) == []
    assert is_open([*views, by_hand], seconds) == []
    assert is_open([*views, *follow_ups({t for t, *_ in specs} - {PARENT})], seconds) == []


@given(wakes, st.integers(0, 2000))
def test_its_due_time_is_when_it_opens_and_its_evidence_names_only_wakes_past_grace(specs, seconds):
    views = [*base("wake"), *built(specs)]
    findings = rule.findings(snapshot(*views), SETTINGS, at(seconds))
    for finding in findings:
        for wake_id in finding.evidence["wakes"]:
            stray = next(v for v in views if getattr(v, "id", None) == wake_id)
            assert stray.thread != PARENT and stray.outcome != "updated"
            assert stray.queued_at.timestamp() + GRACE <= at(seconds).timestamp()
    due = rule.due_times(snapshot(*views), SETTINGS, at(seconds))
    if not findings and due:
        assert is_open(views, (due[("task", TASK)] - at(0)).total_seconds()) == [TASK]


@given(wakes, st.integers(0, 2000), st.randoms(use_true_random=False))
def test_the_order_of_the_views_does_not_matter(specs, seconds, random):
    views = [*base("wake"), *built(specs)]
    shuffled = list(views)
    random.shuffle(shuffled)
    first = rule.findings(snapshot(*views), SETTINGS, at(seconds))
    again = rule.findings(snapshot(*shuffled), SETTINGS, at(seconds))
    assert [(f.subject_id, f.evidence) for f in first] == [
        (f.subject_id, f.evidence) for f in again
    ]
