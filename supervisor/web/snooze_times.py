"""How long a snooze lasts, from a form: one of the set lengths, or until a chosen time.

The chosen time is UTC (the page says so), to the minute, at most SNOOZE_MAX ahead: a
longer quiet is a resolve, or a silence.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from supervisor.core.flags.snoozes import SNOOZE_MAX
from supervisor.core.flags.writers import FlagActionError

SNOOZE_CHOICES = (("1h", "1 hour", 1), ("4h", "4 hours", 4), ("24h", "1 day", 24))
UNTIL = "until"  # the choice that reads the `until` field


def snooze_until(chosen: str | None, until: str | None, now: datetime) -> datetime:
    """The end of the snooze the form asks for, or FlagActionError saying what is wrong."""
    return quiet_until_from_form(chosen, until, now)


def quiet_until_from_form(
    chosen: str | None,
    until: str | None,
    now: datetime,
    *,
    what: str = "snooze",
    instead: str = "resolve the flag instead",
) -> datetime:
    """The end of a quiet (a snooze, a silence) a form asks for: one of SNOOZE_CHOICES
    or a chosen UTC time, in the future and at most SNOOZE_MAX ahead; else
    FlagActionError saying what is wrong, in the words of `what` it is.

    A time typed in `until` wins over the chosen length: on the task page the field sits
    folded beside the lengths, and whoever opened it and typed a time meant that time."""
    hours = {key: h for key, _, h in SNOOZE_CHOICES}.get(chosen or "")
    if hours is not None and not (until or "").strip():
        return now + timedelta(hours=hours)
    if chosen != UNTIL and hours is None:
        raise FlagActionError(f"choose how long to {what}")
    try:
        end = datetime.strptime((until or "").strip(), "%Y-%m-%dT%H:%M").replace(tzinfo=UTC)
    except ValueError:
        raise FlagActionError(
            f"give the time to {what} until as YYYY-MM-DD HH:MM, in UTC"
        ) from None
    if end <= now:
        raise FlagActionError(f"{end:%Y-%m-%d %H:%M} UTC has passed; choose a later time")
    if end - now > SNOOZE_MAX:
        days = SNOOZE_MAX.days
        raise FlagActionError(f"a {what} lasts at most {days} days; {instead}")
    return end
