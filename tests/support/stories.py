"""Small histories the page tests build: a child thread's runs, wakes and background
items, and evaluation failures waiting for an admin."""

from datetime import timedelta

from supervisor.core import clock
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import SweepFailure, Thread
from tests.support.factories import at


def failures(n: int) -> None:
    now = clock.now()
    SweepFailure.objects.bulk_create(
        SweepFailure(
            job="sweep",
            subject_type="task",
            subject_id=f"task:f{i}",
            key=f"sweep:task:-:task:f{i}",
            error="ValueError: no",
            traceback="",
            first_failed_at=now,
            last_failed_at=now,
            retry_at=now + timedelta(minutes=1),
        )
        for i in range(n)
    )


def child_thread_story(source) -> Thread:
    """task:x delegated to thread:c; run 1 starts tests in the background and ends on an
    interim text; the tests' end wakes run 2; a message starts run 3 later."""
    apply_events(
        source,
        [
            event(
                1,
                "task.delegated",
                0,
                task="task:x",
                parent_thread="thread:p",
                child_thread="thread:c",
                title="Run the suite",
            ),
            event(
                2,
                "run.requested",
                1,
                thread="thread:c",
                run="c:1",
                ordinal=1,
                trigger={"kind": "delegation", "task": "task:x"},
            ),
            event(3, "run.started", 2, thread="thread:c", run="c:1"),
            event(
                4,
                "background.started",
                3,
                thread="thread:c",
                item="c:bg",
                kind="command",
                run="c:1",
                label="pytest -q",
                awaited=True,
            ),
            event(
                5,
                "run.finished",
                4,
                thread="thread:c",
                run="c:1",
                status="completed",
                summary="Waiting for the tests.",
            ),
            event(6, "background.finished", 5, thread="thread:c", item="c:bg", status="completed"),
            event(
                7,
                "wake.queued",
                6,
                wake="c:w1",
                thread="thread:c",
                source={"kind": "background", "item": "c:bg"},
                summary="pytest -q finished",
            ),
            event(8, "wake.delivered", 7, wake="c:w1"),
            event(
                9,
                "run.requested",
                7,
                thread="thread:c",
                run="c:2",
                ordinal=2,
                trigger={"kind": "wake", "wake": "c:w1"},
            ),
            event(
                10,
                "run.finished",
                8,
                thread="thread:c",
                run="c:2",
                status="completed",
                summary="All 212 tests pass.",
            ),
            event(
                11,
                "run.requested",
                20,
                thread="thread:c",
                run="c:3",
                ordinal=3,
                trigger={"kind": "message"},
            ),
            event(
                12,
                "run.finished",
                21,
                thread="thread:c",
                run="c:3",
                status="failed",
                summary="Stopped: the provider is overloaded.",
                error="provider overloaded",
            ),
        ],
    )
    return Thread.objects.get(thread_id="thread:c")


def event(n: int, type_: str, seconds: float, **data) -> dict:
    return {"id": f"e{n}", "type": type_, "at": at(seconds), "data": data}
