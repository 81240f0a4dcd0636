"""Server-rendered pages; htmx requests get the page's partial alone."""

from datetime import timedelta
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from supervisor.core import clock
from supervisor.core.flags import (
    FlagActionError,
    do_acknowledge_flag,
    do_resolve_flag_by_hand,
    do_snooze_flag,
)
from supervisor.core.models import Source

from supervisor.api.pagination import decode, encode
from supervisor.api.tasks import PAGE_SIZE, open_flag_kinds, task_queryset
from supervisor.core.loader import load_for_task
from supervisor.core.models import Flag, Task
from supervisor.core.rules import RULES
from supervisor.core.task_detail import describe_task

STATUSES = ("running", "waiting", "completed", "failed", "cancelled", "interrupted")


def _template(request, name: str, partial: str) -> str:
    return f"{name}#{partial}" if request.headers.get("HX-Request") else name


@login_required
def task_list(request):
    filters = {k: request.GET.get(k, "").strip() for k in ("q", "status", "flag")}
    tasks = task_queryset(
        q=filters["q"] or None,
        status=filters["status"] or None,
        flag=filters["flag"] or None,
        state=Flag.OPEN if filters["flag"] else None,
    )
    cursor = request.GET.get("cursor")
    if cursor:
        from datetime import datetime

        from django.db.models import Q
        from ninja.errors import HttpError

        try:
            at, pk = decode(cursor, (datetime, int))
        except HttpError:
            at = pk = None
        if pk is not None:
            tasks = tasks.filter(Q(delegated_at__lt=at) | Q(delegated_at=at, pk__lt=pk))
    page = list(tasks.order_by("-delegated_at", "-pk")[: PAGE_SIZE + 1])
    next_cursor = None
    if len(page) > PAGE_SIZE:
        page = page[:PAGE_SIZE]
        next_cursor = encode(page[-1].delegated_at, page[-1].pk)
    kinds = open_flag_kinds(page)
    context = {
        "rows": [{"task": t, "flags": sorted(kinds[t.pk])} for t in page],
        "filters": filters,
        "statuses": STATUSES,
        "flag_kinds": sorted(rule.KIND for rule in RULES),
        "next_cursor": next_cursor,
        "sources": Source.objects.filter(revoked_at__isnull=True).order_by("name"),
        "next_query": urlencode(
            {**{k: v for k, v in filters.items() if v}, "cursor": next_cursor or ""}
        ),
    }
    return render(request, _template(request, "web/task_list.html", "rows"), context)


@login_required
def task_detail(request, pk: int):
    task = get_object_or_404(
        Task.objects.select_related("namespace", "parent_thread", "child_thread"),
        pk=pk,
        known=True,
    )
    detail = describe_task(task, load_for_task(task))
    flags = task.flags.order_by("-state", "-opened_at")
    context = {
        "task": task,
        "detail": detail,
        "flags": flags,
        "can_act": request.user.has_perm("core.change_flag"),
        "snooze_choices": SNOOZE_CHOICES,
    }
    return render(request, _template(request, "web/task_detail.html", "results"), context)


SNOOZE_CHOICES = (("1h", "1 hour", 1), ("4h", "4 hours", 4), ("24h", "1 day", 24))


@login_required
@require_POST
def flag_action(request, pk: int):
    """Acknowledge, snooze or resolve a flag from its task page (POST, then back)."""
    if not request.user.has_perm("core.change_flag"):
        raise PermissionDenied("your account may look but not act")
    flag = get_object_or_404(Flag, pk=pk)
    action, now = request.POST.get("action"), clock.now()
    actor = f"user:{request.user.get_username()}"
    try:
        if action == "acknowledge":
            do_acknowledge_flag(flag, now, by=request.user, actor=actor)
            messages.success(request, f"Acknowledged {flag.kind}.")
        elif action == "snooze":
            hours = {key: h for key, _, h in SNOOZE_CHOICES}.get(request.POST.get("for"))
            if hours is None:
                raise FlagActionError("choose how long to snooze")
            do_snooze_flag(flag, now + timedelta(hours=hours), now, actor=actor)
            messages.success(request, f"Snoozed {flag.kind} for {hours} h.")
        elif action == "resolve":
            do_resolve_flag_by_hand(
                flag, now, reason=request.POST.get("reason", ""), by=request.user, actor=actor
            )
            messages.success(request, f"Resolved {flag.kind}.")
        else:
            raise FlagActionError("unknown action")
    except FlagActionError as exc:
        messages.error(request, f"Could not {action or 'act on'} {flag.kind}: {exc}.")
    if flag.task_id:
        return redirect("web:task-detail", pk=flag.task_id)
    return redirect("web:task-list")
