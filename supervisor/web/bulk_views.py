"""One action on many tasks from the list: the selected ones, or every task matching
the list's filters. A preview shows the count and what each task would get; the
confirmation carries the exact tasks it showed (their digest), and nothing is done if
they changed meanwhile: the new preview is shown instead (409)."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from supervisor.core.actions import (
    BULK_LIMIT,
    KINDS,
    do_request_bulk,
    preview_action,
    selection_digest,
)

from . import page_data
from .views import can_act

PREVIEW_ROWS = 100


def _targets(params) -> tuple[list, str | None]:
    """(tasks, error): the selected tasks, or every task matching the filters."""
    if params.get("scope") == "matching":
        filters = page_data.list_filters(params)
        if not any(filters.values()):
            return [], "choose a filter first: bulk actions on every task are not allowed"
        tasks = page_data.filtered_tasks(filters)
    else:
        pks = [int(pk) for pk in params.getlist("task") if pk.isdigit()]
        if not pks:
            return [], "select at least one task (or choose “every task matching the filters”)"
        tasks = page_data.known_tasks().filter(pk__in=pks)
    tasks = list(tasks.order_by("-delegated_at", "-pk")[: BULK_LIMIT + 1])
    if len(tasks) > BULK_LIMIT:
        return [], f"more than {BULK_LIMIT} tasks match: narrow the filters"
    return tasks, None


def _back_to_list(params):
    kept = {k: params.get(k) for k in page_data.LIST_FILTERS if params.get(k)}
    query = urlencode(kept)
    return redirect(reverse("web:task-list") + (f"?{query}" if query else ""))


@login_required
@require_http_methods(["GET", "POST"])
def bulk_action(request):
    if not can_act(request.user):
        raise PermissionDenied("your account may look but not act")
    params = request.POST if request.method == "POST" else request.GET
    kind = params.get("kind")
    if kind not in KINDS:
        messages.error(request, f"Choose an action: {', '.join(KINDS)}.")
        return _back_to_list(params)
    tasks, error = _targets(params)
    if error:
        messages.error(request, f"Could not prepare the bulk action: {error}.")
        return _back_to_list(params)
    if request.method == "POST":
        return _confirm(request, params, kind, tasks)
    return _show_preview(request, params, kind, tasks)


def _show_preview(request, params, kind: str, tasks: list, *, changed: bool = False):
    rows = [{"task": t, "preview": preview_action(t, kind)} for t in tasks[:PREVIEW_ROWS]]
    return render(
        request,
        "web/bulk_preview.html",
        {
            "kind": kind,
            "label": page_data.ACTION_LABELS[kind],
            "count": len(tasks),
            "rows": rows,
            "more": max(0, len(tasks) - PREVIEW_ROWS),
            "allowed": sum(1 for r in rows if r["preview"].allowed),
            "scope": params.get("scope") or "selected",
            "pks": [t.pk for t in tasks],
            "selection": selection_digest(tasks),
            "changed": changed,
            "filters": {k: params.get(k) for k in page_data.LIST_FILTERS if params.get(k)},
        },
        status=409 if changed else 200,
    )


def _confirm(request, params, kind: str, tasks: list):
    if params.get("selection") != selection_digest(tasks):
        return _show_preview(request, params, kind, tasks, changed=True)
    outcome = do_request_bulk(
        tasks,
        kind,
        actor=f"user:{request.user.get_username()}",
        user=request.user,
        reason=params.get("reason") or None,
    )
    messages.success(
        request, f"Queued {len(outcome.created)} of {len(tasks)} ({page_data.ACTION_LABELS[kind]})."
    )
    for task, why in outcome.refused[:10]:
        messages.warning(request, f"{task.title or task.task_id}: {why}.")
    if len(outcome.refused) > 10:
        messages.warning(request, f"…and {len(outcome.refused) - 10} more refused.")
    return _back_to_list(params)
