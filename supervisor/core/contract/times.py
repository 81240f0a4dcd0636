"""The window of times the supervisor accepts, and time arithmetic that cannot overflow.

An event's times must lie between EARLIEST and a day past the supervisor's clock when
it arrives: before 2000 no orchestrator wrote these events, and a time further ahead
is a broken clock, not a sender a few hours fast (a local time labelled UTC is at most
14 hours off). Outside the window an event is a dead letter, kept for the operator to
fix and replay. Rows stored before the window existed may still hold any time, so the
rules add durations with `after`, which stops at the last representable moment
instead of raising.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
AHEAD = timedelta(days=1)
# The last moment a datetime can hold: a due time past it is "never", in effect.
NEVER = datetime.max.replace(tzinfo=UTC)


def outside_window(at: datetime, now: datetime) -> str | None:
    """Why `at` is not a time the supervisor accepts, or None when it is."""
    if at < EARLIEST:
        return f"is before {EARLIEST:%Y-%m-%d}: no orchestrator time is that early"
    if at > now + AHEAD:
        return (
            f"is more than a day past the supervisor's clock ({now:%Y-%m-%dT%H:%M:%SZ}): "
            "the sender's clock is wrong; fix the time and replay the event"
        )
    return None


def after(at: datetime, seconds: float) -> datetime:
    """`at` plus `seconds`, or NEVER when that is past what a datetime can hold."""
    try:
        return at + timedelta(seconds=seconds)
    except OverflowError:
        return NEVER if seconds > 0 else datetime.min.replace(tzinfo=UTC)
