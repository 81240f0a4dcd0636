"""Times: an event whose time lies outside the window the supervisor accepts
is a dead letter naming the field; rows stored before the window existed (any time
at all) cannot make a rule's due time overflow, so their subjects' flags still move."""

import itertools
import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from hypothesis import given
from hypothesis import strategies as st

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.contract.events import parse_event
from supervisor.core.contract.times import AHEAD, EARLIEST
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.detection.sweep import sweep
from supervisor.core.ingest.apply import apply_events
from supervisor.core.ingest.dead_letters import do_replay_dead_letter
from supervisor.core.models import (
    DeadLetter,
    Flag,
    IngestedEvent,
    Run,
    SweepFailure,
    Task,
    Wake,
)
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db

SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))["events"]
LAST = max(parse_event(e).at for e in SEED000)  # run 4 of the retry-port task finishes
RETRY_PORT = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
PARENT, CHILD = "thread:parent-release", "thread:delegated-task:retry-port"
LATEST = "All checks green, both reviews addressed. PR #812 is ready to merge."
STALE_FLAGS = {"premature_completion", "stale_result", "undelivered_result"}
Y9999 = "9999-12-31T23:59:00Z"
YEAR_1 = "0001-01-01T00:00:00Z"
NOW = LAST + timedelta(minutes=5)


def wake(wake_id, when, task=RETRY_PORT, summary="late news"):
    return {
        "id": f"q-{wake_id}",
        "type": "wake.queued",
        "at": when,
        "data": {
            "wake": wake_id,
            "thread": PARENT,
            "source": {"kind": "task", "task": task, "thread": CHILD},
            "summary": summary,
        },
    }


def delegated(task, when, **more):
    data = {"task": task, "parent_thread": PARENT, "child_thread": f"thread:{task}"}
    return {
        "id": f"d-{task}",
        "type": "task.delegated",
        "at": when,
        "data": {**data, "title": f"Task {task}", **more},
    }


def run_requested(task, when):
    thread = f"thread:{task}"
    return {
        "id": f"r-{task}",
        "type": "run.requested",
        "at": when,
        "data": {
            "thread": thread,
            "run": f"{thread}:1",
            "ordinal": 1,
            "trigger": {"kind": "delegation", "task": task},
        },
    }


def ingest(source, events, when=NOW):
    with time_machine.travel(when, tick=False):
        return apply_events(source, events)


def judge(source, when=NOW):
    with time_machine.travel(when, tick=False):
        return evaluate(source.namespace_id, clock.now())


def open_kinds(subject_id=RETRY_PORT) -> set[str]:
    rows = Flag.objects.filter(subject_id=subject_id, state="open")
    return set(rows.values_list("kind", flat=True))


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# --- the window, at ingest -----------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "field"),
    [
        ([wake("w:9999", Y9999)], "at"),
        ([delegated("task:far", Y9999)], "at"),
        ([delegated("task:old", YEAR_1), run_requested("task:old", Y9999)], "at"),
        ([delegated("task:asked", "2026-11-05T23:00:00Z", requested_at=Y9999)], "requested_at"),
    ],
    ids=["wake-at-9999", "delegated-at-9999", "delegated-at-year-1-run-at-9999", "requested-9999"],
)
def test_an_event_outside_the_window_is_a_dead_letter_naming_its_field(source, events, field):
    result = ingest(source, events)
    assert result.accepted == 0 and len(result.rejected) == len(events)
    letters = DeadLetter.objects.filter(source=source).order_by("pk")
    assert [letter.event_id for letter in letters] == [e["id"] for e in events]
    for letter in letters:
        assert field in letter.error and ("before 2000" in letter.error or "a day" in letter.error)
    assert not IngestedEvent.objects.exists() and not Task.objects.filter(known=True).exists()


def test_the_window_takes_its_edges_and_a_fast_sender_clock(source):
    now = datetime(2026, 11, 6, tzinfo=UTC)
    edges = [
        delegated("task:first", "2000-01-01T00:00:00Z"),
        delegated("task:fast", "2026-11-06T14:00:00+00:00"),  # local time labelled UTC
        delegated("task:last", "2026-11-07T00:00:00Z"),
    ]
    beyond = [
        {**delegated("task:early", "1999-12-31T23:59:59.999999Z")},
        {**delegated("task:late", "2026-11-07T00:00:00.000001Z")},
    ]
    result = ingest(source, edges + beyond, now)
    assert result.accepted == 3
    assert [r["id"] for r in result.rejected] == ["d-task:early", "d-task:late"]
    assert "at: is before 2000-01-01" in result.rejected[0]["error"]
    assert "at: is more than a day past the supervisor's clock" in result.rejected[1]["error"]


def test_a_dead_letter_outside_the_window_replays_once_its_time_is_fixed(source):
    ingest(source, [wake("w:9999", Y9999)])
    letter = DeadLetter.objects.get()
    fixed = wake("w:9999", LAST.isoformat())
    with time_machine.travel(NOW, tick=False):
        result = do_replay_dead_letter(letter, json.dumps(fixed))
    assert result.accepted == 1 and Wake.objects.filter(wake_id="w:9999").exists()


# --- rows stored before the window ----------------------------------------------------


def test_a_stored_wake_at_9999_leaves_evaluation_working(source):
    ingest(source, SEED000 + [wake("w:far", LAST.isoformat())])
    Wake.objects.filter(wake_id="w:far").update(queued_at=moment(Y9999))
    judge(source)
    assert open_kinds() == STALE_FLAGS  # and no late_wake: its time is never reached
    assert Task.objects.get(task_id=RETRY_PORT).evaluated_at == NOW


def test_a_stored_delegation_at_9999_leaves_evaluation_working(source):
    ingest(source, [delegated("task:far", LAST.isoformat())])
    Task.objects.filter(task_id="task:far").update(delegated_at=moment(Y9999))
    judge(source)
    task = Task.objects.get(task_id="task:far")
    assert task.evaluated_at == NOW and task.next_check_at.year == 9999


def test_a_stored_delegation_at_year_1_with_a_run_at_9999_leaves_evaluation_working(source):
    ingest(
        source,
        [delegated("task:old", LAST.isoformat()), run_requested("task:old", NOW.isoformat())],
    )
    Task.objects.filter(task_id="task:old").update(delegated_at=moment(YEAR_1))
    Run.objects.filter(requested_event="r-task:old").update(requested_at=moment(Y9999))
    judge(source, NOW + timedelta(hours=1))
    assert Task.objects.get(task_id="task:old").evaluated_at == NOW + timedelta(hours=1)


def test_a_stale_tasks_flags_resolve_after_delivery_beside_a_stored_wake_at_9999(source):
    """The issue's freeze: the sweep kept failing on the task, its three flags open."""
    ingest(source, SEED000 + [wake("w:far", LAST.isoformat())], LAST)
    Wake.objects.filter(wake_id="w:far").update(queued_at=moment(Y9999))
    with time_machine.travel(NOW, tick=False):
        sweep(clock.now())
    assert open_kinds() == STALE_FLAGS
    delivery = [
        wake("w:latest", (NOW + timedelta(seconds=1)).isoformat(), summary=LATEST),
        {
            "id": "dl-latest",
            "type": "wake.delivered",
            "at": (NOW + timedelta(seconds=2)).isoformat(),
            "data": {"wake": "w:latest"},
        },
    ]
    later = NOW + timedelta(minutes=1)
    ingest(source, delivery, later)
    with time_machine.travel(later, tick=False):
        sweep(clock.now())
    assert open_kinds() == set()


# --- every rule, on accepted events at the window's edges -----------------------------

EDGE = datetime(2026, 11, 6, tzinfo=UTC)
TAKEN = [EARLIEST, EARLIEST + timedelta(microseconds=1), EDGE, EDGE + AHEAD]
REFUSED = [EARLIEST - timedelta(microseconds=1), EDGE + AHEAD + timedelta(microseconds=1)]
REFUSED_TEXT = {when.isoformat() for when in REFUSED}
NAMESPACES = itertools.count()


def family_at(times: list[datetime]) -> list[dict]:
    """One of each event a rule reads, about one task family, the n-th at times[n]."""
    child, run1, sub = "thread:c", "thread:c:1", "task:sub"
    task = {"kind": "task", "task": "task:t", "thread": child}
    shapes = [
        (
            "task.delegated",
            {
                "task": "task:t",
                "parent_thread": PARENT,
                "child_thread": child,
                "title": "T",
                "prompt": "p",
            },
        ),
        (
            "run.requested",
            {
                "thread": child,
                "run": run1,
                "ordinal": 1,
                "trigger": {"kind": "delegation", "task": "task:t"},
            },
        ),
        ("run.started", {"thread": child, "run": run1}),
        ("run.activity", {"thread": child, "run": run1}),
        ("background.started", {"thread": child, "item": "i", "kind": "command", "run": run1}),
        ("background.finished", {"thread": child, "item": "i", "status": "completed"}),
        (
            "task.delegated",
            {
                "task": sub,
                "parent_thread": child,
                "child_thread": "thread:s",
                "title": "S",
                "parent_run": run1,
            },
        ),
        ("run.finished", {"thread": child, "run": run1, "status": "completed", "summary": "ok"}),
        (
            "task.reported",
            {
                "task": "task:t",
                "status": "completed",
                "summary": "ok",
                "result_run": run1,
                "delivery": "wake",
            },
        ),
        ("wake.queued", {"wake": "w:t", "thread": PARENT, "source": task, "summary": "ok"}),
        (
            "wake.queued",
            {"wake": "w:ghost", "thread": PARENT, "source": {**task, "task": "task:ghost"}},
        ),
        (
            "wake.queued",
            {"wake": "w:c", "thread": child, "source": {"kind": "background", "item": "i"}},
        ),
        ("wake.delivered", {"wake": "w:c"}),
        ("task.reported", {"task": sub, "status": "running"}),
        (
            "tool.rejected",
            {
                "thread": PARENT,
                "tool": "delegate_task",
                "code": "parent_not_active",
                "message": "no",
            },
        ),
        ("task.requested", {"parent_thread": PARENT, "client_request_id": "req-hung"}),
    ]
    events = []
    for n, ((kind, data), when) in enumerate(zip(shapes, times, strict=False)):
        events.append({"id": f"e{n}", "type": kind, "at": when.isoformat(), "data": data})
    events[0]["data"]["requested_at"] = times[-1].isoformat()
    return events


@given(times=st.lists(st.sampled_from(TAKEN + REFUSED), min_size=17, max_size=17))
def test_events_at_the_windows_edges_are_taken_or_refused_and_never_fail_a_rule(times):
    name = f"edges-{next(NAMESPACES)}"
    source, _ = do_create_source(name, namespace=name)
    events = family_at(times)
    result = ingest(source, events, EDGE)
    refused = {e["id"] for e in events if {e["at"], e["data"].get("requested_at")} & REFUSED_TEXT}
    assert {r["id"] for r in result.rejected} == refused
    # Judged now and long after, and swept at the window's far edge: no rule fails.
    for when in (EDGE, EDGE + 1000 * AHEAD):
        due = evaluate(source.namespace_id, when)
        assert due is None or due > when
    with time_machine.travel(EDGE + AHEAD, tick=False):
        sweep(clock.now(), source.namespace_id)
    assert not SweepFailure.objects.exists()
