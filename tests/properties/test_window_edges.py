"""No time can make a rule fail. Every rule, on a task family whose times sit
at the edges of the window the supervisor accepts (times.py) or anywhere a row stored
before the window may hold (year 1, the end of 9999), finds and says when it next
changes without raising; a due time is always a time after "now"."""

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from supervisor.core.contract.times import AHEAD, EARLIEST, NEVER
from supervisor.core.facts.snapshot import (
    DetectionSettings,
    Finding,
    ItemView,
    RejectionView,
    ReportView,
    RequestView,
    RunView,
    Snapshot,
    TaskView,
    WakeView,
)
from supervisor.core.rules import RULES, judge, source_silent

FIRST = datetime.min.replace(tzinfo=UTC)
TASK, SUB, PARENT, CHILD = "task:t", "task:sub", "thread:parent", "thread:child"
NOWS = st.sampled_from([EARLIEST, datetime(2026, 11, 5, 22, 40, tzinfo=UTC), NEVER - AHEAD])
DURATIONS = st.sampled_from([0.0, 1.0, 600.0, 1e9, 1e18])


@st.composite
def moments(draw, now):
    """A time at an edge of the window around `now`, or one only a stored row holds."""
    edges = [EARLIEST, EARLIEST + timedelta(microseconds=1), now, now + AHEAD, FIRST, NEVER]
    return draw(st.sampled_from(edges) | st.none())


@st.composite
def family(draw, now):
    """A task with reports, runs, an item, wakes both ways, a task it delegated, a
    rejection and task requests: every view a rule reads, each time drawn from the edges."""
    t = lambda: draw(moments(now))  # noqa: E731
    terminal = st.sampled_from(
        ["running", "waiting", "completed", "failed", "interrupted", "cancelled"]
    )
    reports = tuple(
        ReportView(
            f"rep{n}",
            t() or now,
            draw(terminal),
            summary=draw(st.sampled_from([None, "done", "503 overloaded"])),
            result_run=draw(st.sampled_from([None, "r1", "r2"])),
            delivery=draw(st.sampled_from([None, "wake"])),
        )
        for n in range(draw(st.integers(0, 2)))
    )
    tasks = [
        TaskView(
            TASK,
            parent_thread=PARENT,
            child_thread=CHILD,
            title="T",
            prompt="p",
            requested_at=t(),
            delegated_at=t(),
            delegated_event="d",
            reports=reports,
        ),
        TaskView(
            SUB,
            parent_thread=CHILD,
            child_thread="thread:sub",
            title="T",
            prompt="p",
            parent_run="r1",
            delegated_at=t(),
            delegated_event="d-sub",
        ),
        TaskView(
            "task:again",
            parent_thread=PARENT,
            child_thread="thread:again",
            title="T",
            prompt="p",
            delegated_at=t(),
            delegated_event="d-again",
            client_request_id="req-again",
        ),
    ]
    runs = []
    for n, thread in ((1, CHILD), (2, CHILD), (1, PARENT)):
        finished = t()
        runs.append(
            RunView(
                f"r{n}" if thread == CHILD else "p1",
                thread,
                ordinal=n,
                trigger_kind="delegation" if n == 1 else "wake",
                trigger_ref=TASK if n == 1 else "w-child",
                requested_at=t(),
                started_at=t(),
                last_activity_at=t(),
                finished_at=finished,
                finished_event="f" if finished else None,
                requested_event="q",
                status="completed" if finished else None,
                summary=draw(st.sampled_from(["done", "later"])) if finished else None,
                finish_cause=draw(st.sampled_from([None, "restart"])),
            )
        )
    item_end = t()
    item = ItemView(
        "i1",
        CHILD,
        run="r1",
        awaited=draw(st.sampled_from([None, False, True])),
        started_at=t(),
        started_event="i-s",
        finished_at=item_end,
        finished_event="i-f" if item_end else None,
    )
    wakes = []
    for name, target, kind, source in (
        ("w-parent", PARENT, "task", TASK),
        ("w-ghost", PARENT, "task", "task:unknown"),
        ("w-child", CHILD, "background", None),
    ):
        delivered = draw(st.booleans())
        wakes.append(
            WakeView(
                name,
                thread=target,
                source_kind=kind,
                source_task=source,
                source_thread=CHILD if kind == "task" else None,
                source_item="i1",
                summary=draw(st.sampled_from([None, "done", "later"])),
                queued_at=t(),
                queued_event=f"{name}/q",
                delivered_at=t() if delivered else None,
                delivered_event=f"{name}/d" if delivered else None,
            )
        )
    snap = Snapshot(
        tasks={task.id: task for task in tasks},
        runs={run.id: run for run in runs},
        items={"i1": item},
        wakes={wake.id: wake for wake in wakes},
        rejections=[RejectionView("x", PARENT, "delegate_task", "parent_not_active", at=t())],
        requests=[
            RequestView(f"req{n}", PARENT, request_id, t() or now)
            for n, request_id in enumerate(("req-again", "req-hung"))
        ],
        threads={PARENT, CHILD, "thread:sub", "thread:again"},
    )
    return snap


@given(data=st.data(), now=NOWS, duration=DURATIONS)
def test_every_rule_judges_times_at_the_windows_edges_without_raising(data, now, duration):
    snap = data.draw(family(now))
    settings = DetectionSettings(**dict.fromkeys(DetectionSettings.__dataclass_fields__, duration))
    for rule in RULES:  # each on its own: a failure names its rule
        found = rule.findings(snap, settings, now)
        assert all(isinstance(finding, Finding) for finding in found)
        if hasattr(rule, "due_times"):
            due = rule.due_times(snap, settings, now)
            assert all(now < when <= NEVER for when in due.values()), rule.KIND
    assert not judge(snap, settings, now).failed


@given(now=NOWS, duration=DURATIONS, last=st.sampled_from([FIRST, EARLIEST, NEVER]))
def test_source_silence_judges_any_last_event_time(now, duration, last):
    settings = DetectionSettings(source_silence=duration)
    view = source_silent.SourceView("s", last, unfinished_tasks=1, settings=settings)
    found = source_silent.findings([view], now)
    assert [f.subject_id for f in found] == (
        ["s"] if (now - last).total_seconds() >= duration else []
    )
