"""GET /api/v1/tasks and /api/v1/tasks/{id} (contract §6)."""

from collections import defaultdict
from datetime import datetime

from django.db.models import Q
from django.http import HttpRequest
from ninja.errors import HttpError

from supervisor.core.actions.advice import advise
from supervisor.core.facts.loader import load_for_task
from supervisor.core.facts.task_detail import describe_task
from supervisor.core.models import Flag, Task
from supervisor.core.queries.task_query import PAGE_SIZE, task_queryset

from . import pagination
from .answers import errors
from .auth import namespace_of
from .inputs import Text
from .scopes import ScopedRouter
from .serialize import action_json, flag_json, task_summary_json

router = ScopedRouter(tags=["tasks"])


def open_flag_kinds(tasks) -> dict[int, list[str]]:
    kinds = defaultdict(list)
    for task_id, kind in Flag.objects.filter(
        task__in=[t.pk for t in tasks], state=Flag.OPEN
    ).values_list("task_id", "kind"):
        kinds[task_id].append(kind)
    return kinds


@router.get("/tasks", response={200: dict, **errors(404)}, summary="List tasks, newest first")
def list_tasks(
    request: HttpRequest,
    flag: Text | None = None,
    state: Text | None = None,
    status: Text | None = None,
    q: Text | None = None,
    namespace: Text | None = None,
    cursor: Text | None = None,
    limit: int = PAGE_SIZE,
):
    if state not in (None, Flag.OPEN, Flag.RESOLVED):
        raise HttpError(400, "state must be 'open' or 'resolved'")
    limit = max(1, min(limit, 200))
    tasks = task_queryset(
        flag=flag, state=state, status=status, q=q, namespace=namespace_of(request, namespace)
    )
    if cursor:
        at, pk = pagination.decode(cursor, (datetime, int))
        tasks = tasks.filter(Q(delegated_at__lt=at) | Q(delegated_at=at, pk__lt=pk))
    page = list(tasks.order_by("-delegated_at", "-pk")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    kinds = open_flag_kinds(page)
    return {
        "items": [task_summary_json(t, kinds[t.pk]) for t in page],
        "next": pagination.encode(page[-1].delegated_at, page[-1].pk) if more else None,
    }


def find_task(task_id: str, namespace: str | None) -> Task:
    """One task by orchestrator id; 409 when the id exists in several namespaces."""
    tasks = Task.objects.filter(task_id=task_id, known=True).select_related(
        "namespace", "parent_thread", "child_thread", "assignee"
    )
    if namespace:
        tasks = tasks.filter(namespace__name=namespace)
    found = list(tasks[:20])
    if not found:
        raise HttpError(404, f"no task {task_id!r}")
    if len(found) > 1:
        names = sorted(t.namespace.name for t in found)
        raise HttpError(409, f"task {task_id!r} exists in namespaces {names}; add ?namespace=")
    return found[0]


TASK_DETAIL = """The task as contract §6 gives it, with what Supervisor adds (the latest
result, the handover, reports, owned runs; docs/event-contract.md).

`suggestions`: the actions the task page suggests, the most useful first, each
`{"kind": "deliver" | "continue" | "cancel", "label", "flags": [the open flag kinds
behind it], "why_not": why it cannot be sent now, or null when it can, "status": null,
"under way" (an action of the kind is queued or sending) or "sent" (one succeeded and
its flags are still open), "note": with a status, the action and what is awaited, "why":
why it is suggested when no flag calls for it, "run": for deliver, the run whose result
it hands over (null: the latest)}`. Send one with `POST .../actions` (`kind`, `run`)."""


@router.get(
    "/tasks/{anytext:task_id}",
    response={200: dict, **errors(404, 409)},
    summary="One task with its runs, wakes, flags and suggested actions",
    description=TASK_DETAIL,
)
def get_task(request: HttpRequest, task_id: Text, namespace: Text | None = None):
    task = find_task(task_id, namespace_of(request, namespace))
    snap = load_for_task(task)
    detail = describe_task(task, snap)
    flags = list(
        Flag.objects.filter(task=task).select_related("namespace").order_by("opened_at", "pk")
    )
    open_flags = [f for f in flags if f.state == Flag.OPEN]
    actions = list(task.actions.order_by("created_at", "pk"))
    advice = advise(task, snap, snap.tasks[task.task_id], open_flags, actions)
    return {
        **task_summary_json(task, [f.kind for f in open_flags]),
        **detail.as_json(),
        "flags": [flag_json(f) for f in flags],
        "actions": [action_json(a) for a in actions],
        # What the task page suggests, alike (core.actions.advice).
        "suggestions": [s.as_json() for s in advice.suggestions],
    }
