"""How fresh the data on a page is: every page says when its sources last sent, and
warns when one has gone quiet, so an operator never trusts a page that stopped moving.

"Quiet" is the `source_silent` flag (the detection settings decide when a silence is
long enough); the ages themselves tick on in the browser (live.js) between changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Exists, OuterRef
from django.utils.functional import SimpleLazyObject

from supervisor.core.models import Flag, Source
from supervisor.core.rules import source_silent


@dataclass(frozen=True)
class SourceFreshness:
    name: str
    last_event_at: datetime | None
    quiet: bool


@dataclass(frozen=True)
class Freshness:
    sources: tuple[SourceFreshness, ...]

    @property
    def newest(self) -> datetime | None:
        return max((s.last_event_at for s in self.sources if s.last_event_at), default=None)

    @property
    def quiet(self) -> tuple[SourceFreshness, ...]:
        return tuple(s for s in self.sources if s.quiet)


def freshness() -> Freshness:
    """The sources that send (not revoked, not Supervisor's own), each with whether it
    is silent: one query."""
    silent = Flag.objects.filter(
        namespace_id=OuterRef("namespace_id"),
        kind=source_silent.KIND,
        state=Flag.OPEN,
        subject_type="source",
        subject_id=OuterRef("name"),
    )
    rows = (
        Source.objects.filter(revoked_at__isnull=True, internal=False)
        .annotate(quiet=Exists(silent))
        .order_by("name")
        .values_list("name", "last_event_at", "quiet")
    )
    return Freshness(tuple(SourceFreshness(*row) for row in rows))


def page_freshness(request) -> dict:
    """Context processor: `freshness` for base.html, read only if the page shows it
    (an htmx partial never does)."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    return {"freshness": SimpleLazyObject(freshness)}
