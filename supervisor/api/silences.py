"""GET /api/v1/silences: the silences, active and ended, as the Silences page lists them
(beyond contract §6, which knows snoozes only; flags keep their contract shape).

A token reads within its namespace: each active silence's count of the open flags it
holds is of that namespace's, and the source names of other namespaces are left out (a
silence naming only such sources is not listed)."""

from django.db.models import Q
from django.http import HttpRequest
from ninja.errors import HttpError

from supervisor.core import clock
from supervisor.core.models import Namespace, Silence, Source
from supervisor.core.triage import silences

from .answers import errors
from .auth import namespace_of
from .inputs import Text
from .scopes import ScopedRouter

router = ScopedRouter(tags=["silences"])
LIMIT = 200  # the newest ended silences listed; active ones are all listed
STATES = ("active", "ended")


def silence_json(silence: Silence, now, holds: int | None, sources: list[str]) -> dict:
    return {
        "id": silence.pk,
        "matchers": {
            "kinds": silence.kinds,
            "sources": sources,
            "environments": silence.environments,
            "title_words": silence.title_words,
        },
        "reason": silence.reason,
        "starts_at": silence.starts_at,
        "ends_at": silence.ends_at,
        "ended_early_at": silence.ended_at,
        "active": silence.ends_at > now,
        "holds_open_flags": holds,
    }


@router.get(
    "/silences",
    response={200: dict, **errors(404)},
    summary="List silences: the active ones (soonest to end first), then those that ended",
)
def list_silences(request: HttpRequest, state: Text | None = None):
    if state not in (None, *STATES):
        raise HttpError(400, "state must be 'active' or 'ended'")
    now = clock.now()
    namespace = namespace_of(request)
    namespace_id = None
    own: set[str] | None = None
    if namespace is not None:  # a token: its namespace only
        namespace_id = Namespace.objects.filter(name=namespace).values_list("pk", flat=True)[0]
        own = set(Source.objects.filter(namespace_id=namespace_id).values_list("name", flat=True))
    rows = []
    if state in (None, "active"):
        rows += list(Silence.objects.filter(ends_at__gt=now).order_by("ends_at", "pk"))
    if state in (None, "ended"):
        ended = Silence.objects.filter(Q(ends_at__lte=now)).order_by("-ends_at", "-pk")
        rows += list(ended[:LIMIT])
    counts = silences.held_counts(silences.active(now), namespace_id)
    items = []
    for silence in rows:
        sources = silence.sources if own is None else [s for s in silence.sources if s in own]
        if silence.sources and not sources:
            continue  # it names only other namespaces' sources
        items.append(silence_json(silence, now, counts.get(silence.pk), sources))
    return {"items": items}
