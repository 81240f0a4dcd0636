"""What base.html needs to make a page live: the socket to follow, where to resume, and
the tab title's count."""

from __future__ import annotations

from urllib.parse import urlencode

from supervisor.core import clock
from supervisor.core.models import Change, Flag
from supervisor.core.triage import silences


def last_change_id() -> int:
    """The newest change-log id: a live page resumes from here."""
    return Change.objects.order_by("-id").values_list("id", flat=True).first() or 0


def open_flag_count() -> int:
    """The tab title's count: open flags nobody has taken up (acknowledged, snoozed or
    silenced), as the overview counts them."""
    return Flag.objects.filter(silences.needing_action(clock.now())).count()


def live_context(view: str, pk: int | None = None) -> dict:
    """What base.html needs to make a page live: the socket URL and where to resume."""
    query = {"view": view} | ({"id": pk} if pk is not None else {})
    return {
        "live": {
            "view": view,
            "id": pk,
            "url": "/ws/live/?" + urlencode(query),
            "last_change": last_change_id(),
            "open_flags": open_flag_count(),
        }
    }
