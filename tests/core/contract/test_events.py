"""An `at` may carry any number of fractional digits; the contract says those
past microseconds are cut (not rounded). More than nine were refused. A malformed time
is still refused, with the same clear error."""

from datetime import UTC, datetime

import pytest
import time_machine

from supervisor.core.contract.events import parse_timestamp
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import DeadLetter, Task

pytestmark = pytest.mark.django_db

MOMENT = datetime(2026, 11, 5, 22, 40, 0, 123456, tzinfo=UTC)
NOW = datetime(2026, 11, 6, tzinfo=UTC)


@pytest.mark.parametrize(
    "digits", ["1234567", "123456789", "1234567891", "123456" + "9" * 24], ids=[7, 9, 10, 30]
)
def test_digits_past_microseconds_are_cut(digits):
    assert parse_timestamp(f"2026-11-05T22:40:00.{digits}Z") == MOMENT
    assert parse_timestamp(f"2026-11-05T23:40:00.{digits}+01:00") == MOMENT


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2026-11-05T22:40:00.1Z", MOMENT.replace(microsecond=100000)),
        ("2026-11-05T22:40:00.000000999999999Z", MOMENT.replace(microsecond=0)),
        ("9999-12-31T23:59:59." + "9" * 40 + "Z", datetime.max.replace(tzinfo=UTC)),
        ("0001-01-01T00:00:00." + "0" * 40 + "Z", datetime.min.replace(tzinfo=UTC)),
        ("2024-02-29T23:59:59.9999999999+00:00", datetime(2024, 2, 29, 23, 59, 59, 999999, UTC)),
    ],
    ids=["one-digit", "nines-below-a-microsecond", "last-moment", "first-moment", "leap-day"],
)
def test_the_calendars_edges_are_cut_never_rounded_past_them(text, moment):
    assert parse_timestamp(text) == moment


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-05T22:40:00.Z",
        "2026-11-05T22:40:00.12345678901x Z",
        "2026-11-05T22:40:00.1234567890",
        "2026-11-05T22:40:00,1234567890Z",
        "2026-11-05T22:40:00.12345678901234567890.1Z",
        "2026-02-30T22:40:00.1234567890Z",
        "9999-12-31T23:59:59.9999999999-01:00",
    ],
    ids=["no-digit", "junk", "no-offset", "comma", "two-fractions", "february-30", "past-9999"],
)
def test_a_malformed_time_is_still_refused(text):
    with pytest.raises(ValueError, match="RFC 3339 timestamp|is not a real time"):
        parse_timestamp(text)


def delegated(task: str, at: str) -> dict:
    data = {"task": task, "parent_thread": "thread:p", "title": f"Task {task}"}
    return {"id": f"d-{task}", "type": "task.delegated", "at": at, "data": data}


def test_ingest_takes_long_fractions_and_cuts_them_at_the_windows_edges(source):
    events = [
        delegated("task:ten", "2026-11-05T22:40:00.1234567891Z"),
        delegated("task:thirty", "2026-11-05T22:40:00.123456" + "9" * 24 + "Z"),
        # Cut, the first is the window's last moment; rounded, it would be past it.
        delegated("task:last", "2026-11-07T00:00:00.0000009999Z"),
        # Cut, 1999's last microsecond stays in 1999; rounded, it would be taken.
        delegated("task:early", "1999-12-31T23:59:59.99999999999Z"),
    ]
    with time_machine.travel(NOW, tick=False):
        result = apply_events(source, events)
    assert result.accepted == 3, result.rejected
    assert [r["id"] for r in result.rejected] == ["d-task:early"]
    assert "at: is before 2000-01-01" in result.rejected[0]["error"]
    stored = dict(Task.objects.filter(known=True).values_list("task_id", "delegated_at"))
    assert stored == {
        "task:ten": MOMENT,
        "task:thirty": MOMENT,
        "task:last": datetime(2026, 11, 7, tzinfo=UTC),
    }
    assert list(DeadLetter.objects.values_list("event_id", flat=True)) == ["d-task:early"]
