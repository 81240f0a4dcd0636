"""GET /api/v1/flags (contract §6); flag actions come with detection as a service."""

from datetime import datetime

from django.db.models import Q
from ninja import Router
from ninja.errors import HttpError

from supervisor.core.models import Flag

from . import pagination
from .auth import readers
from .serialize import flag_json

router = Router(tags=["flags"], auth=readers())


@router.get("/flags", summary="List flags of tasks, threads and sources, newest first")
def list_flags(
    request,
    state: str | None = None,
    kind: str | None = None,
    subject: str | None = None,
    cursor: str | None = None,
    limit: int = 50,
):
    if state not in (None, Flag.OPEN, Flag.RESOLVED):
        raise HttpError(400, "state must be 'open' or 'resolved'")
    flags = Flag.objects.select_related("namespace")
    if state:
        flags = flags.filter(state=state)
    if kind:
        flags = flags.filter(kind=kind)
    if subject:
        flags = flags.filter(subject_id=subject)
    if cursor:
        at, pk = pagination.decode(cursor, (datetime, int))
        flags = flags.filter(Q(opened_at__lt=at) | Q(opened_at=at, pk__lt=pk))
    limit = max(1, min(limit, 200))
    page = list(flags.order_by("-opened_at", "-pk")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return {
        "items": [flag_json(f) for f in page],
        "next": pagination.encode(page[-1].opened_at, page[-1].pk) if more else None,
    }
