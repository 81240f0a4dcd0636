"""Which routes a flag goes to (kind, source, environment, severity), and whether a
route is in its quiet hours now (then: until when)."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from supervisor.core.flags.kinds import at_least
from supervisor.core.models import Flag, Source, Task

from .models import Route


def routes_for(flags: list[Flag]) -> list[tuple[Flag, list[Route]]]:
    """Each flag with the routes it goes to; the routes, environments and sources read
    once for all of them."""
    if not flags:
        return []
    enabled = Route.objects.filter(enabled=True, channel__enabled=True).select_related("channel")
    enabled = list(enabled)
    envs, names = {}, {}
    if any(r.environments for r in enabled):
        tasks = Task.objects.filter(pk__in={f.task_id for f in flags if f.task_id})
        envs = dict(tasks.values_list("pk", "env"))
    if any(r.sources for r in enabled):
        # A flag belongs to a namespace; the sources are those that report into it.
        sources = Source.objects.filter(namespace_id__in={f.namespace_id for f in flags})
        for namespace_id, name in sources.values_list("namespace_id", "name"):
            names.setdefault(namespace_id, set()).add(name)
    return [
        (
            flag,
            [
                r
                for r in enabled
                if (not r.kinds or flag.kind in r.kinds)
                and at_least(flag.kind, r.min_severity)
                and (not r.environments or envs.get(flag.task_id) in r.environments)
                and (not r.sources or names.get(flag.namespace_id, set()) & set(r.sources))
            ],
        )
        for flag in flags
    ]


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
