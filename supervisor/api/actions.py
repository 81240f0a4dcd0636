"""POST /api/v1/tasks/{id}/actions (contract §6) and bulk actions by filter.

A token acts only on its own namespace's tasks; a session needs the `core.act`
permission. An `Idempotency-Key` header makes a retried request return the first
action instead of asking twice. A preview (`GET …/actions/preview`) answers with a
digest; a request carrying it (`preview`) is refused with 409 and the new preview when
what would be sent changed since, and is the same request each time it is sent. A bulk
preview shows every task with what it would get, as its own preview does; its
confirmation must carry the preview's `selection`, which pins those tasks and texts:
sent again (or with the same `Idempotency-Key`), it asks for nothing new and answers
what was asked in `already`. Who may call each operation: scopes.py.
"""

from typing import Literal

from django.http import HttpRequest, JsonResponse
from ninja import Schema, Status
from ninja.errors import HttpError

from supervisor.core.actions.bulk_pins import NotAPin, changes_since, pin, read_pin
from supervisor.core.actions.idempotency import bulk_asked_before, check_key
from supervisor.core.actions.previews import (
    KINDS,
    ActionRefused,
    PreviewChanged,
    new_preview_id,
    preview_action,
)
from supervisor.core.actions.writers import BULK_LIMIT, do_request_action, do_request_bulk
from supervisor.core.models import Flag
from supervisor.core.queries.task_query import task_queryset

from .answers import errors
from .auth import WITHHELD, actor_of, may_read, namespace_of
from .inputs import STRICT, Id, Text
from .scopes import ScopedRouter
from .serialize import action_json, preview_json
from .tasks import find_task

router = ScopedRouter(tags=["actions"])


class ActionRequest(Schema):
    model_config = STRICT

    kind: Literal["cancel", "continue", "deliver"]
    message: Text | None = None
    run: Id | None = None
    reason: Text | None = None
    # The digest of the preview this request confirms (GET …/actions/preview).
    preview: Text | None = None


def idempotency_key(request: HttpRequest) -> str | None:
    """The request's Idempotency-Key, or None without the header; an empty or bad one
    is a 400 naming what is wrong (never taken as no key)."""
    key = request.headers.get("Idempotency-Key")
    if key is not None:
        try:
            check_key(key)
        except ActionRefused as exc:
            raise HttpError(exc.status, str(exc)) from None
    return key


def changed(request: HttpRequest, refusal: PreviewChanged) -> JsonResponse:
    return JsonResponse(
        {"error": str(refusal), "preview": shown(request, preview_json(refusal.preview))},
        status=409,
    )


def shown(request: HttpRequest, answer: dict, *, named: bool = True) -> dict:
    """A preview or an action as this caller may see it: without its text for a token
    that may act but not read (auth.may_read), and without what names its task (the
    task, its run, its target thread) unless the caller `named` it."""
    if may_read(request):
        return answer
    unnamed = {} if named else {"task": None, "run": None, "target_thread": None}
    return {**answer, "text": None, **unnamed, "withheld": WITHHELD}


@router.get(
    "/tasks/{anytext:task_id}/actions/preview",
    response={200: dict, **errors(404, 409)},
    summary="What an action would send, where, and what else it affects (with its digest)",
)
def preview_request(
    request: HttpRequest,
    task_id: Text,
    kind: Text,
    run: Id | None = None,
    message: Text | None = None,
    namespace: Text | None = None,
):
    if kind not in KINDS:
        raise HttpError(400, f"kind must be one of {', '.join(KINDS)}")
    task = find_task(task_id, namespace_of(request, namespace))
    return shown(request, preview_json(preview_action(task, kind, run=run, message=message)))


@router.post(
    "/tasks/{anytext:task_id}/actions",
    response={202: dict, **errors(404, 409)},
    summary="Cancel, continue or deliver (202 with the action's id and state)",
)
def request_action(
    request: HttpRequest, task_id: Text, body: ActionRequest, namespace: Text | None = None
):
    user, actor = actor_of(request)
    key = idempotency_key(request)
    task = find_task(task_id, namespace_of(request, namespace))
    try:
        action, _created = do_request_action(
            task,
            body.kind,
            actor=actor,
            user=user,
            run=body.run,
            message=body.message,
            reason=body.reason,
            key=key,
            previewed=body.preview,
        )
    except PreviewChanged as exc:
        return changed(request, exc)
    except ActionRefused as exc:
        raise HttpError(exc.status, str(exc)) from None
    return Status(202, shown(request, action_json(action)))


class BulkFilter(Schema):
    model_config = STRICT

    flag: Text | None = None
    state: Literal["open", "resolved"] | None = None
    status: Text | None = None
    q: Text | None = None
    namespace: Text | None = None


class BulkRequest(Schema):
    model_config = STRICT

    kind: Literal["cancel", "continue", "deliver"]
    filter: BulkFilter
    reason: Text | None = None
    message: Text | None = None
    confirm: bool = False
    # With confirm: the preview's `selection` (the signed pin of the tasks it showed and
    # what each would get); if the filter now matches other tasks, or a task would get
    # another text, nothing is done (409, naming what changed) and the new preview is given.
    selection: Text | None = None
    # With confirm, also checked when given: the count the operator saw.
    expected: int | None = None


@router.post(
    "/actions/bulk",
    response={200: dict, **errors(404, 409)},
    summary="Preview (each matching task and what it would get) or perform one action on each",
)
def bulk_action(request: HttpRequest, body: BulkRequest):
    user, actor = actor_of(request)
    key = idempotency_key(request)
    f = body.filter
    if not any((f.flag, f.state, f.status, f.q, f.namespace)):
        raise HttpError(
            400,
            "give a filter (flag, state, status, q or namespace); "
            "bulk actions on every task are not allowed",
        )
    namespace = namespace_of(request, f.namespace)
    tasks = task_queryset(
        flag=f.flag,
        state=f.state or (Flag.OPEN if f.flag else None),
        status=f.status,
        q=f.q,
        namespace=namespace,
    ).order_by("-delegated_at", "-pk")
    count = tasks.count()
    if count > BULK_LIMIT:
        raise HttpError(400, f"{count} tasks match; narrow the filter to at most {BULK_LIMIT}")
    readable = may_read(request)
    if not body.confirm:
        preview_id = new_preview_id()
        previews = [
            preview_action(t, body.kind, message=body.message, preview_id=preview_id) for t in tasks
        ]
        return bulk_preview(body.kind, previews, readable, preview_id)
    if body.selection is None:
        raise HttpError(400, "confirm needs 'selection', as the preview answered it")
    try:
        pinned = read_pin(body.selection, body.kind)
        # What this selection (or this key) asked for before: the same request again.
        earlier = bulk_asked_before(
            body.kind, preview_id=pinned.id, bulk_key=key, namespace=namespace
        )
    except NotAPin as exc:
        raise HttpError(400, str(exc)) from None
    except ActionRefused as exc:
        raise HttpError(exc.status, str(exc)) from None
    # Shown under the pin's id, they compare with what it pinned.
    previews = [
        preview_action(t, body.kind, message=body.message, preview_id=pinned.id) for t in tasks
    ]
    asked = {action.task_id for action in earlier}
    changed, gone = changes_since(pinned, previews, asked=asked)
    if changed or gone or (not earlier and body.expected not in (None, count)):
        return bulk_changed(body.kind, previews, changed, gone, readable)
    # Each task's action is checked again as it is recorded: a text that changes in
    # between is refused for that task (PreviewChanged), never sent unseen.
    outcome = do_request_bulk(
        [p.task for p in previews],
        body.kind,
        actor=actor,
        user=user,
        reason=body.reason,
        message=body.message,
        previewed={p.task.pk: p.digest for p in previews},
        preview_id=pinned.id,
        bulk_key=key,
    )
    matching = {p.task.pk for p in previews}
    # Asked before for a task that no longer matches (a cancel done, say): still asked.
    already = outcome.already + [a for a in earlier if a.task_id not in matching]
    return {
        "kind": body.kind,
        "count": count,
        "actions": [shown(request, action_json(a), named=False) for a in outcome.created],
        "already": [shown(request, action_json(a), named=False) for a in already],
        "refused": [
            {"task": t.task_id if readable else None, "namespace": t.namespace.name, "error": error}
            for t, error in outcome.refused
        ],
    }


NAMED_CHANGES = 10  # tasks named one by one in a 409's error


def bulk_changed(
    kind: str, previews: list, changed: list, gone: int, readable: bool
) -> JsonResponse:
    """409: nothing was done; what changed since the preview, and the new preview."""
    others = gone or any(what == "new since the preview" for _, what in changed)
    lead = (
        f"the filter now matches other tasks than the preview showed ({len(previews)} now)"
        if others or not changed
        else "what the tasks would get changed since the preview"
    )
    named = "; ".join(f"{t.task_id}: {what}" for t, what in changed[:NAMED_CHANGES])
    if len(changed) > NAMED_CHANGES:
        named += f"; and {len(changed) - NAMED_CHANGES} more"
    if not readable:
        named, changed = (f"{len(changed)} task(s)" if changed else ""), []
    if gone:
        # The pin names tasks by keyed tags only: those gone are counted, not named.
        named += f"{'; ' if named else ''}{gone} task(s) of the preview no longer match"
    # The new preview is a request of its own: another id than the one confirmed.
    preview_id = new_preview_id()
    for preview in previews:
        preview.id = preview_id
    return JsonResponse(
        {
            "error": f"{lead}{': ' + named if named else ''}; nothing was done: read the new "
            "preview and confirm again",
            "changed": [
                {"task": t.task_id, "namespace": t.namespace.name, "what": what}
                for t, what in changed
            ],
            "no_longer_matching": gone,
            "preview": bulk_preview(kind, previews, readable, preview_id),
        },
        status=409,
    )


SAMPLE = 20  # the contract's `sample`: the first tasks, with what each would get


def bulk_preview(kind: str, previews: list, readable: bool, preview_id: str) -> dict:
    """The count, every matching task with what it would get (as its own preview says
    it; `sample` is the first of them, as contract 1.1 has it), and the `selection` that
    pins them (`previews` are shown under `preview_id`): a confirmation must carry it.
    A caller that may act but not read gets the count and the selection only."""
    tasks = [preview_json(p) for p in previews] if readable else []
    answer = {
        "kind": kind,
        "count": len(previews),
        "tasks": tasks,
        "sample": tasks[:SAMPLE],
        "selection": pin(kind, previews, preview_id),
    }
    return answer if readable else {**answer, "withheld": WITHHELD}
