"""Which routes a flag goes to (kind, source, environment, severity), and whether a
route is in its quiet hours now (then: until when)."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from supervisor.core.flags.kinds import at_least
from supervisor.core.models import Flag, Source, Task

from .models import Route


def routes_for(flag: Flag) -> list[Route]:
    routes = [
        r
        for r in Route.objects.filter(enabled=True, channel__enabled=True).select_related("channel")
        if (not r.kinds or flag.kind in r.kinds) and at_least(flag.kind, r.min_severity)
    ]
    if any(r.environments for r in routes):
        env = None
        if flag.task_id:
            env = Task.objects.filter(pk=flag.task_id).values_list("env", flat=True).first()
        routes = [r for r in routes if not r.environments or env in r.environments]
    if any(r.sources for r in routes):
        # A flag belongs to a namespace; the sources are those that report into it.
        names = set(
            Source.objects.filter(namespace_id=flag.namespace_id).values_list("name", flat=True)
        )
        routes = [r for r in routes if not r.sources or names & set(r.sources)]
    return routes


def quiet_until(route: Route, now: datetime) -> datetime | None:
    """The end of the quiet hours `now` falls in, or None when sending is allowed."""
    if route.quiet_start is None or route.quiet_end is None or route.quiet_start == route.quiet_end:
        return None
    local = now.astimezone(ZoneInfo(route.quiet_tz or "UTC"))
    start, end, t = route.quiet_start, route.quiet_end, local.time()
    overnight = start > end  # e.g. 22:00-07:00
    inside = (t >= start or t < end) if overnight else (start <= t < end)
    if not inside:
        return None
    until = local.replace(hour=end.hour, minute=end.minute, second=0, microsecond=0)
    if until <= local:
        until += timedelta(days=1)
    return until.astimezone(now.tzinfo)
