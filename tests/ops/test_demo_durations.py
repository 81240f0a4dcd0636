"""`SUPERVISOR_DEMO_DURATIONS`: `make run`'s demo at a shorter pace, for a walk-through or
a test of the pages (tests/browser/test_first_run.py); a bad value is a clear error."""

import pytest

from supervisor.ops.startup import StartupError, bind_demo


def durations_of(command: list[str]) -> str | None:
    return command[command.index("--durations") + 1] if "--durations" in command else None


@pytest.mark.django_db
def test_the_demo_keeps_its_own_pace_unless_told(monkeypatch):
    monkeypatch.delenv("SUPERVISOR_DEMO_DURATIONS", raising=False)
    assert durations_of(bind_demo("python").command) is None
    monkeypatch.setenv("SUPERVISOR_DEMO_DURATIONS", " 0.05 ")
    assert durations_of(bind_demo("python").command) == "0.05"


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["fast", "0", "-1", "2", "nan"])
def test_a_bad_pace_is_refused_by_name(monkeypatch, value):
    monkeypatch.setenv("SUPERVISOR_DEMO_DURATIONS", value)
    with pytest.raises(StartupError, match="SUPERVISOR_DEMO_DURATIONS must be a number"):
        bind_demo("python")
