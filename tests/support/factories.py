"""Events for tests, in the contract's own shape, applied through the real ingest path."""

from datetime import UTC, datetime, timedelta

from supervisor.core.ingest.apply import apply_events

BASE = datetime(2026, 11, 5, 22, 0, tzinfo=UTC)


def at(seconds: float) -> str:
    return (BASE + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def task_events(n: int, *, prefix="t", title="Task", offset=0.0) -> list[dict]:
    """A delegated task with a report, two runs and a wake to the parent."""
    task, child = f"task:{prefix}{n}", f"thread:{prefix}{n}"
    start = offset + n * 10
    return [
        {
            "id": f"{prefix}{n}-d",
            "type": "task.delegated",
            "at": at(start),
            "data": {
                "task": task,
                "parent_thread": "thread:lead",
                "child_thread": child,
                "title": f"{title} {n}",
                "mode": "async",
            },
        },
        {
            "id": f"{prefix}{n}-r1",
            "type": "run.requested",
            "at": at(start + 1),
            "data": {
                "thread": child,
                "run": f"{child}:1",
                "ordinal": 1,
                "trigger": {"kind": "delegation", "task": task},
            },
        },
        {
            "id": f"{prefix}{n}-f1",
            "type": "run.finished",
            "at": at(start + 2),
            "data": {
                "thread": child,
                "run": f"{child}:1",
                "status": "completed",
                "summary": f"result {n}",
            },
        },
        {
            "id": f"{prefix}{n}-rep",
            "type": "task.reported",
            "at": at(start + 3),
            "data": {
                "task": task,
                "status": "completed",
                "summary": f"result {n}",
                "result_run": f"{child}:1",
            },
        },
        {
            "id": f"{prefix}{n}-w",
            "type": "wake.queued",
            "at": at(start + 4),
            "data": {
                "wake": f"w:{prefix}{n}",
                "thread": "thread:lead",
                "source": {"kind": "task", "task": task, "thread": child},
                "summary": f"result {n}",
                "outcome": "completed",
            },
        },
    ]


def make_tasks(source, count: int, **kwargs) -> None:
    events = [e for n in range(count) for e in task_events(n, **kwargs)]
    apply_events(source, events)
