"""A task left by a restart and stuck, its continue sent to a webhook receiver, and the run
the orchestrator starts for it (the continue's manual wake)."""

from datetime import UTC, datetime, timedelta

from supervisor.core.models import Flag
from tests.support.scenarios import OWN_SCENARIOS

SECRET = "a-test-secret-of-some-length"
LEFT = next(p for p in OWN_SCENARIOS if p.name == "left-by-restart.json")
TASK, CHILD = "task:lr", "thread:lr-child"
DONE = "Watched the deploy to the end: staging is healthy."


def at(minutes: float) -> datetime:
    return datetime(2026, 11, 21, 9, 0, tzinfo=UTC) + timedelta(minutes=minutes)


def open_kinds(task) -> set[str]:
    return set(Flag.objects.filter(task=task, state="open").values_list("kind", flat=True))


def run_events(wake: str, *, finished: bool) -> list[dict]:
    """The child's run as the orchestrator reports it: started by the continue's wake."""
    run = f"{CHILD}~2"
    events = [
        {
            "id": "lr-cont-1",
            "type": "run.requested",
            "at": at(45.1).isoformat(),
            "data": {
                "thread": CHILD,
                "run": run,
                "ordinal": 2,
                "trigger": {"kind": "wake", "wake": wake},
            },
        },
        {
            "id": "lr-cont-2",
            "type": "run.started",
            "at": at(45.2).isoformat(),
            "data": {"thread": CHILD, "run": run},
        },
    ]
    if finished:
        events.append(
            {
                "id": "lr-cont-3",
                "type": "run.finished",
                "at": at(50).isoformat(),
                "data": {"thread": CHILD, "run": run, "status": "completed", "summary": DONE},
            }
        )
    return events
