"""delegation_never_started: a task.requested that no delegation or refusal answers
within spawn_timeout."""

from dataclasses import replace
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from supervisor.core.rules import delegation_never_started as rule
from tests.support.snapshots import (
    PARENT,
    SETTINGS,
    at,
    rejection,
    request,
    snapshot,
    subjects,
    task,
)

LATE = at(SETTINGS.spawn_timeout + 10)


def open_on(*views, now=LATE):
    return subjects(rule.findings(snapshot(*views), SETTINGS, now))


def test_opens_on_the_parent_thread_at_spawn_timeout():
    assert open_on(request(when=0)) == [PARENT]


def test_not_open_before_spawn_timeout():
    assert open_on(request(when=0), now=at(SETTINGS.spawn_timeout - 1)) == []
    assert open_on(request(when=0), now=at(SETTINGS.spawn_timeout)) == [PARENT]


def test_the_delegation_with_the_same_request_id_answers_it_whenever_it_comes():
    for delegated in (5, 600, -3):  # soon, late, or stamped before the request (skew)
        done = task(delegated=delegated, client_request_id="req-1")
        assert open_on(request(when=0), done, now=at(7200)) == []


def test_a_delegation_with_another_request_id_or_parent_does_not_answer_it():
    other_id = task(client_request_id="req-2")
    other_parent = task("task:u", parent="thread:other", client_request_id="req-1")
    assert open_on(request(), other_id, other_parent) == [PARENT]


def test_a_task_only_reported_does_not_answer_it():
    reported_only = replace(task(client_request_id="req-1"), known=False)
    assert open_on(request(), reported_only) == [PARENT]


def test_a_refused_delegation_at_or_after_the_request_answers_it():
    assert open_on(request(when=10), rejection("e1", when=10)) == []
    assert open_on(request(when=10), rejection("e1", when=50)) == []


def test_an_earlier_refusal_or_another_tool_does_not_answer_it():
    assert open_on(request(when=10), rejection("e1", when=9)) == [PARENT]
    refused_write = rejection("e1", tool="write_file", code="denied", when=20)
    assert open_on(request(when=10), refused_write) == [PARENT]
    elsewhere = rejection("e1", thread="thread:other", when=20)
    assert open_on(request(when=10), elsewhere) == [PARENT]


def test_a_request_sent_again_counts_from_its_first_time():
    again = request(id="again", when=100)
    assert open_on(request(when=0), again) == [PARENT]
    finding = rule.findings(snapshot(again, request(when=0)), SETTINGS, LATE)[0]
    assert finding.evidence["events"] == ["req-1/requested@0"]


def test_one_finding_per_thread_with_every_hung_request():
    views = (
        request("req-b", when=20, title="Audit"),
        request("req-a", when=10),
        request("req-c", thread="thread:b"),
        request("req-d", when=30),
        task(client_request_id="req-d"),
    )
    found = rule.findings(snapshot(*views), SETTINGS, at(600))
    assert [(f.subject_type, f.subject_id) for f in found] == [
        ("thread", "thread:b"),
        ("thread", PARENT),
    ]
    evidence = found[1].evidence
    assert [r["client_request_id"] for r in evidence["requests"]] == ["req-a", "req-b"]
    assert "'Audit'" in evidence["text"]
    assert evidence["requests"][0]["requested_at"] == at(10).isoformat()


def test_evidence_does_not_move_with_the_clock():
    snap = snapshot(request(when=0))
    first = rule.findings(snap, SETTINGS, LATE)[0].evidence
    assert rule.findings(snap, SETTINGS, at(9999))[0].evidence == first


def test_due_at_the_earliest_unanswered_request_on_each_thread():
    snap = snapshot(
        request("req-a", when=30),
        request("req-b", when=10),
        request("req-c", when=5),
        task(client_request_id="req-c"),
        request("req-d", thread="thread:b", when=50),
    )
    assert rule.due_times(snap, SETTINGS, at(20)) == {
        ("thread", PARENT): at(10 + SETTINGS.spawn_timeout),
        ("thread", "thread:b"): at(50 + SETTINGS.spawn_timeout),
    }
    # Past its due time a request is a finding, not a due time.
    assert rule.due_times(snap, SETTINGS, at(10 + SETTINGS.spawn_timeout)) == {
        ("thread", PARENT): at(30 + SETTINGS.spawn_timeout),
        ("thread", "thread:b"): at(50 + SETTINGS.spawn_timeout),
    }


def test_no_due_time_once_answered():
    snap = snapshot(request(when=0), task(client_request_id="req-1"))
    assert rule.due_times(snap, SETTINGS, at(1)) == {}


def test_spawn_timeout_is_a_setting():
    short = replace(SETTINGS, spawn_timeout=10)
    assert subjects(rule.findings(snapshot(request(when=0)), short, at(10))) == [PARENT]


# --- properties over any mix of requests, delegations and refusals --------------------

THREADS = (PARENT, "thread:b")
IDS = ("req-1", "req-2", "req-3")


@st.composite
def histories(draw):
    """Requests (some sent again), tasks delegated for some of them (perhaps from
    another thread) and refusals, at times within a few spawn timeouts."""
    when = st.integers(0, 600)
    requests = [
        request(rid, id=f"q{n}", thread=draw(st.sampled_from(THREADS)), when=draw(when))
        for n, rid in enumerate(draw(st.lists(st.sampled_from(IDS), max_size=6)))
    ]
    tasks = [
        task(f"task:{n}", parent=draw(st.sampled_from(THREADS)), client_request_id=rid)
        for n, rid in enumerate(draw(st.lists(st.sampled_from(IDS), max_size=3)))
    ]
    refusals = [
        rejection(f"x{n}", thread=draw(st.sampled_from(THREADS)), when=draw(when))
        for n in range(draw(st.integers(0, 2)))
    ]
    return snapshot(*requests, *tasks, *refusals)


def expected(snap, now):
    """The raise condition read plainly: a thread with a request id whose first request
    is spawn_timeout old, that no delegation from the thread and no refusal on the
    thread at or after that first request answers."""
    hung = set()
    for (thread, rid), first in rule.first_requests(snap).items():
        delegated = any(
            t.parent_thread == thread and t.client_request_id == rid for t in snap.tasks.values()
        )
        refused = any(r.thread == thread and r.at >= first.at for r in snap.rejections)
        if not delegated and not refused and first.at + timedelta(seconds=120) <= now:
            hung.add(thread)
    return sorted(hung)


@given(histories(), st.integers(0, 900))
def test_open_exactly_where_a_request_hangs(snap, seconds):
    now = at(seconds)
    assert subjects(rule.findings(snap, SETTINGS, now)) == expected(snap, now)


@given(histories(), st.integers(0, 900))
def test_findings_change_only_at_due_times(snap, seconds):
    # Between now and the next due time nothing changes; at it, its thread opens.
    now = at(seconds)
    due = rule.due_times(snap, SETTINGS, now)
    assert all(when > now for when in due.values())
    before = {
        (f.subject_id, tuple(f.evidence["events"])) for f in rule.findings(snap, SETTINGS, now)
    }
    nxt = min(due.values(), default=at(100_000))
    just_before = nxt - timedelta(microseconds=1)
    still = {
        (f.subject_id, tuple(f.evidence["events"]))
        for f in rule.findings(snap, SETTINGS, just_before)
    }
    assert still == before
    for (_, thread), when in due.items():
        if when == nxt:
            assert thread in subjects(rule.findings(snap, SETTINGS, nxt))


@given(histories(), st.integers(0, 900))
def test_arrival_order_of_the_views_does_not_matter(snap, seconds):
    now = at(seconds)
    turned = snapshot(*reversed(snap.requests), *snap.tasks.values(), *snap.rejections[::-1])
    assert rule.findings(turned, SETTINGS, now) == rule.findings(snap, SETTINGS, now)
    assert [f.evidence for f in rule.findings(turned, SETTINGS, now)] == [
        f.evidence for f in rule.findings(snap, SETTINGS, now)
    ]
    assert rule.due_times(turned, SETTINGS, now) == rule.due_times(snap, SETTINGS, now)
