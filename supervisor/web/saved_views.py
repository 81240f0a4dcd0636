"""Saving, renaming and deleting saved views of the task list (core/queries/saved_views.py).

A view keeps the list's query string, checked by the list's own filter parsing: a
filter the list would refuse (400) is refused here too, in the same words. Any user may
save views, viewers too: a view is a bookmark, not an act on tasks. Forms post and
redirect; each answer says what happened.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from supervisor.core import clock
from supervisor.core.models import SavedView
from supervisor.core.queries.saved_views import (
    SavedViewError,
    do_delete_view,
    do_edit_view,
    do_save_view,
)

from .pages import task_list

QUERY_LENGTH = 2000


def checked_query(query: str) -> tuple[str, list[str]]:
    """(the list's query as a view keeps it, what is wrong with it): only the list's
    filters, in its order, empty ones dropped; the errors are the list's own."""
    query = (query or "").strip().lstrip("?")
    if len(query) > QUERY_LENGTH:
        return "", [f"the filters run past {QUERY_LENGTH} characters"]
    params = QueryDict(query)
    # The page's position (`cursor`) is no filter: a view opens on the newest tasks.
    known = (*task_list.LIST_FILTERS, "cursor")
    errors = [f"“{key}” is no filter of the task list" for key in params if key not in known]
    filters = task_list.list_filters(params)
    errors += task_list.filter_errors(params, filters)
    return urlencode({k: v for k, v in filters.items() if v}), errors


def _list(query: str = ""):
    return redirect(reverse("web:task-list") + (f"?{query}" if query else ""))


@login_required
@require_POST
def save_view(request):
    query, errors = checked_query(request.POST.get("query", ""))
    if errors:
        messages.error(request, "Could not save the view: " + "; ".join(errors) + ".")
        return _list()
    try:
        view = do_save_view(
            request.user,
            request.POST.get("name", ""),
            query,
            shared=request.POST.get("shared") == "on",
            now=clock.now(),
        )
    except SavedViewError as exc:
        messages.error(request, f"Could not save the view: {exc}.")
        return _list(query)
    who = "everyone" if view.shared else "you alone"
    messages.success(request, f"Saved the view “{view.name}”, seen by {who}.")
    return _list(view.query)


@login_required
@require_POST
def edit_view(request, pk: int):
    """Rename a view, change whether it is shared, or delete it: its owner only."""
    view = SavedView.objects.filter(pk=pk).first()
    action = request.POST.get("action")
    if view is None:
        if action == "delete":  # a resend after the first delete: nothing left to do
            messages.info(request, "That view is deleted already.")
            return _list()
        view = get_object_or_404(SavedView, pk=pk)
    if view.owner_id != request.user.pk:
        if view.shared:
            raise PermissionDenied("only its owner can change a saved view")
        raise Http404("No such saved view.")  # someone else's private view: none for you
    try:
        if action == "delete":
            do_delete_view(view, request.user)
            messages.success(request, f"Deleted the view “{view.name}”.")
            return _list()
        if action == "edit":
            shared = request.POST.get("shared") == "on"
            do_edit_view(view, request.user, request.POST.get("name", ""), shared, clock.now())
            messages.success(request, f"Saved the view “{view.name}”.")
            return _list(view.query)
        raise SavedViewError("unknown action")
    except SavedViewError as exc:
        messages.error(request, f"Could not change the view “{view.name}”: {exc}.")
    return _list()
