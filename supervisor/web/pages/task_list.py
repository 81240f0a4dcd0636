"""The task list: its filters (checked, and as a form can show them), one page of the
tasks they select, newest first, each row with its problem; and the known tasks the
other pages read."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Q

from supervisor.core import clock
from supervisor.core.flags.kinds import KINDS
from supervisor.core.ingest.own_records import SUPERVISOR_ENV
from supervisor.core.models import Environment, Flag, Namespace, Task
from supervisor.core.queries.pagination import CursorError, decode, encode
from supervisor.core.queries.task_query import PAGE_SIZE, task_queryset
from supervisor.core.triage import silences
from supervisor.core.triage.assignment import assignable_users

from ..problems import problems_of

STATUSES = ("running", "waiting", "completed", "failed", "cancelled", "interrupted")
FLAG_KINDS = tuple(sorted(KINDS))
FLAG_STATES = (("", "any state"), (Flag.OPEN, "open"), (Flag.RESOLVED, "resolved"))
LIST_FILTERS = ("q", "flag", "state", "status", "env", "parent", "namespace", "assigned")
# The list's "assigned to" filter: the viewer, nobody, or a user by name.
ASSIGNED_ME, ASSIGNED_NOBODY = "me", "nobody"


def task_rows(tasks: list[Task], found: silences.Active | None = None) -> list[dict]:
    """Each task with its open flags as one problem (None when it has none)."""
    problems = problems_of([t.pk for t in tasks], clock.now(), found)
    rows = []
    for task in tasks:
        problem = problems.get(task.pk)
        task.severity = problem.severity if problem else None
        kinds = [f.kind for f in problem.facets] if problem else []
        rows.append({"task": task, "flags": kinds, "problem": problem})
    return rows


def _tasks():
    return Task.objects.filter(known=True).select_related(
        "namespace", "parent_thread", "child_thread", "assignee"
    )


def known_tasks():
    return _tasks()


def known_task(task_pk: int) -> Task | None:
    return _tasks().filter(pk=task_pk).first()


def list_filters(params) -> dict:
    filters = {k: (params.get(k) or "").strip() for k in LIST_FILTERS}
    # `?flag=KIND` alone (older links, the overview) means its open flags.
    if filters["flag"] and "state" not in params:
        filters["state"] = Flag.OPEN
    if filters["state"] not in (Flag.OPEN, Flag.RESOLVED):
        filters["state"] = ""
    return filters


def filter_errors(params, filters: dict) -> list[str]:
    """What is wrong with the list's filters, in words; each one would select nothing
    (or, a state, be dropped), which the page must not pass over in silence."""
    errors = []
    if filters["flag"] and filters["flag"] not in FLAG_KINDS:
        errors.append(f"“{filters['flag']}” is no flag kind")
    state = (params.get("state") or "").strip()
    if state and state not in (Flag.OPEN, Flag.RESOLVED):
        errors.append(f"“{state}” is no flag state (open or resolved)")
    if filters["status"] and filters["status"] not in STATUSES:
        errors.append(f"“{filters['status']}” is no status ({', '.join(STATUSES)})")
    name = filters["namespace"]
    if name and not Namespace.objects.filter(name=name).exists():
        errors.append(f"no namespace is named “{name}”")
    if not _assigned_known(filters["assigned"]):
        errors.append(
            f"no user is named “{filters['assigned']}” (assigned to: me, nobody or a user)"
        )
    return errors


def _assigned_known(value: str) -> bool:
    """Whether the "assigned to" filter names something: empty, me, nobody, or a user."""
    if value in ("", ASSIGNED_ME, ASSIGNED_NOBODY):
        return True
    User = get_user_model()
    return User.objects.filter(**{User.USERNAME_FIELD: value}).exists()


def list_environments() -> list[str]:
    """The environments the list's filter offers: Supervisor's own (deliveries by hand)
    is no machine an operator filters by."""
    names = set(Environment.objects.values_list("name", flat=True)) | target_envs()
    return sorted(names - {SUPERVISOR_ENV})


def form_filters(params) -> dict:
    """The list filters of PARAMS that the list's form can show, the others dropped: a
    flag kind of the catalogue (a flag's id is no kind), a state, a status, and a
    namespace and an environment the form lists. A page that sends an operator back to
    the list (after a bulk action) uses these, so the list shown is the one its form says."""
    filters = {k: v for k, v in list_filters(params).items() if v}
    offered = {"flag": FLAG_KINDS, "status": STATUSES}
    for key, values in offered.items():
        if key in filters and filters[key] not in values:
            del filters[key]
    if "namespace" in filters and not Namespace.objects.filter(name=filters["namespace"]).exists():
        del filters["namespace"]
    if "env" in filters and filters["env"] not in list_environments():
        del filters["env"]
    if "assigned" in filters and not _assigned_known(filters["assigned"]):
        del filters["assigned"]
    return filters


def filtered_tasks(filters: dict, user=None):
    """The known tasks the list's filters (list_filters) select; "assigned to me" means
    `user` (the one looking: a shared view's "mine" is each viewer's own)."""
    tasks = task_queryset(
        q=filters["q"] or None,
        status=filters["status"] or None,
        flag=filters["flag"] or None,
        state=filters["state"] or None,
        namespace=filters["namespace"] or None,
    )
    if filters["env"]:
        tasks = tasks.filter(Q(env=filters["env"]) | Q(target_env=filters["env"]))
    if filters["parent"]:
        tasks = tasks.filter(parent_thread__thread_id=filters["parent"])
    assigned = filters.get("assigned")
    if assigned == ASSIGNED_ME:
        tasks = tasks.filter(assignee=user) if user is not None else tasks.none()
    elif assigned == ASSIGNED_NOBODY:
        tasks = tasks.filter(assignee__isnull=True)
    elif assigned:
        tasks = tasks.filter(**{f"assignee__{get_user_model().USERNAME_FIELD}": assigned})
    return tasks.select_related("assignee")


def target_envs() -> set[str]:
    """The distinct `target_env` values of all tasks, found by skipping through the
    task_target_env index (one probe per value) instead of reading every task."""
    table = connection.ops.quote_name(Task._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE envs(name) AS (
                SELECT MIN(target_env) FROM {table}
                UNION ALL
                SELECT (SELECT MIN(target_env) FROM {table} WHERE target_env > envs.name)
                FROM envs WHERE envs.name IS NOT NULL
            )
            SELECT name FROM envs WHERE name IS NOT NULL
            """
        )
        return {name for (name,) in cursor.fetchall()}


def task_list_context(params, user=None) -> dict:
    filters = list_filters(params)
    errors = filter_errors(params, filters)
    tasks = filtered_tasks(filters, user) if not errors else Task.objects.none()
    cursor = params.get("cursor")
    if cursor:
        try:
            at, pk = decode(cursor, (datetime, int))
        except CursorError:
            at = pk = None
        if pk is not None:
            tasks = tasks.filter(Q(delegated_at__lt=at) | Q(delegated_at=at, pk__lt=pk))
    page = list(tasks.order_by("-delegated_at", "-pk")[: PAGE_SIZE + 1])
    next_cursor = None
    if len(page) > PAGE_SIZE:
        page = page[:PAGE_SIZE]
        next_cursor = encode(page[-1].delegated_at, page[-1].pk)
    active = {k: v for k, v in filters.items() if v}
    environments = list_environments()
    return {
        "rows": task_rows(page),
        "filters": filters,
        "filter_errors": errors,
        "filtered": bool(active),
        "statuses": STATUSES,
        "flag_kinds": FLAG_KINDS,
        "flag_states": FLAG_STATES,
        "environments": environments,
        "namespaces": list(Namespace.objects.order_by("name").values_list("name", flat=True)),
        "assignees": _assignee_names(filters["assigned"]),
        # The filters as a saved view keeps them (saved_views.py checks them again).
        "view_query": urlencode(active),
        "next_cursor": next_cursor,
        "next_query": urlencode({**active, "cursor": next_cursor or ""}),
        "paged": bool(cursor),
    }


def _assignee_names(chosen: str) -> list[str]:
    """The users the "assigned to" filter offers: those who can be assigned, and the
    one chosen (someone who could act once may still hold tasks)."""
    field = get_user_model().USERNAME_FIELD
    names = list(assignable_users().values_list(field, flat=True))
    if chosen and chosen not in (ASSIGNED_ME, ASSIGNED_NOBODY, *names):
        names.append(chosen)
    return names


def task_row_context(task_pk: int) -> dict | None:
    task = _tasks().filter(pk=task_pk).first()
    if task is None:
        return None
    return {"row": task_rows([task])[0]}
