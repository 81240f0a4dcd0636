"""GET /api/v1/flags and POST /api/v1/flags/{id} (contract §6)."""

from datetime import datetime
from typing import Literal

from django.db.models import Q
from ninja import Schema
from ninja.errors import HttpError

from supervisor.core import clock
from supervisor.core.flags.writers import (
    FlagActionError,
    do_acknowledge_flag,
    do_resolve_flag_by_hand,
    do_snooze_flag,
)
from supervisor.core.models import Flag

from . import pagination
from .answers import errors
from .auth import WITHHELD, actor_of, may_read, namespace_of
from .inputs import STRICT, Moment, Text
from .scopes import ScopedRouter
from .serialize import flag_json

router = ScopedRouter(tags=["flags"])


@router.get(
    "/flags",
    response={200: dict, **errors(404)},
    summary="List flags of tasks, threads and sources, newest first",
)
def list_flags(
    request,
    state: Text | None = None,
    kind: Text | None = None,
    subject: Text | None = None,
    namespace: Text | None = None,
    cursor: Text | None = None,
    limit: int = 50,
):
    if state not in (None, Flag.OPEN, Flag.RESOLVED):
        raise HttpError(400, "state must be 'open' or 'resolved'")
    flags = Flag.objects.select_related("namespace")
    namespace = namespace_of(request, namespace)
    if namespace:
        flags = flags.filter(namespace__name=namespace)
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


class FlagAction(Schema):
    model_config = STRICT

    action: Literal["acknowledge", "snooze", "resolve"]
    until: Moment | None = None
    reason: Text | None = None


@router.post(
    "/flags/{flag_id}",
    response={200: dict, **errors(404, 409)},
    summary="Acknowledge, snooze or resolve",
)
def act_on_flag(request, flag_id: int, body: FlagAction):
    flags = Flag.objects.select_related("namespace")
    namespace = namespace_of(request)
    if namespace:  # a token's: a flag of another namespace is not there for it
        flags = flags.filter(namespace__name=namespace)
    flag = flags.filter(pk=flag_id).first()
    if flag is None:
        raise HttpError(
            404, f"no flag {flag_id}" + (f" in namespace {namespace!r}" if namespace else "")
        )
    user, actor = actor_of(request)
    now = clock.now()
    try:
        if body.action == "acknowledge":
            flag = do_acknowledge_flag(flag, now, by=user, actor=actor)
        elif body.action == "snooze":
            if body.until is None:
                raise FlagActionError("snooze needs 'until', an RFC 3339 time")
            if body.until.tzinfo is None:
                raise FlagActionError("'until' needs an offset, like 2026-11-05T23:00:00Z")
            flag = do_snooze_flag(flag, body.until, now, actor=actor)
        else:
            flag = do_resolve_flag_by_hand(
                flag, now, reason=body.reason or "", by=user, actor=actor
            )
    except FlagActionError as exc:
        conflict = "resolved" in str(exc)
        raise HttpError(409 if conflict else 400, str(exc)) from None
    answer = flag_json(flag)
    if not may_read(request):  # evidence quotes what agents wrote
        answer = {**answer, "evidence": None, "withheld": WITHHELD}
    return answer
