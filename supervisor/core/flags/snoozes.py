"""How long a flag's snooze may last, and the snooze a flag's own evidence suggests: an
account limit names when it resets, and a snooze until then keeps the flag quiet while a
continue would only fail again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from supervisor.core import clock
from supervisor.core.models import Flag

SNOOZE_MAX = timedelta(days=30)  # a longer quiet is a resolve, or a silence


def reset_snooze(flag: Flag, evidence: dict) -> datetime | None:
    """When an open flag's evidence names a reset (account_limit: the account's limit
    resets then), the time to snooze it until: to the minute, rounded up so the snooze
    ends once the limit has reset; None when no reset is named, it has passed, it is
    further than a snooze may last, or the flag is already snoozed until then."""
    if flag.state != Flag.OPEN or not isinstance(evidence.get("resets_at"), str):
        return None
    try:
        reset = datetime.fromisoformat(evidence["resets_at"].replace("Z", "+00:00"))
    except ValueError:
        return None
    if reset.tzinfo is None:
        reset = reset.replace(tzinfo=UTC)
    if reset.second or reset.microsecond:
        reset = reset.replace(second=0, microsecond=0) + timedelta(minutes=1)
    now = clock.now()
    if flag.snoozed_until is not None and flag.snoozed_until >= reset:
        return None  # already quiet until the reset: offering it again would do nothing
    return reset if now < reset <= now + SNOOZE_MAX else None
