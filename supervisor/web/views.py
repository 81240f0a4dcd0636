"""Server-rendered pages; htmx requests get the page's main partial alone.

Every page is whole without JavaScript: links are links, forms post and redirect. With
htmx, a request for the page (a filter, a form, the slow poll while the live socket is
down) gets the page's main partial, plus the open-flag count and any messages as
out-of-band swaps.
"""

from urllib.parse import quote, urlencode

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_POST, require_safe

from supervisor.core import clock
from supervisor.core.actions.advice import ACTION_LABELS
from supervisor.core.flags.bulk import FLAG_ACTION_LABELS, do_bulk_flag_action
from supervisor.core.flags.kinds import kind_of
from supervisor.core.flags.writers import (
    FlagActionError,
    do_acknowledge_flag,
    do_resolve_flag_by_hand,
    do_snooze_flag,
    do_unacknowledge_flag,
    do_unsnooze_flag,
)
from supervisor.core.models import Flag, Task, Thread
from supervisor.core.queries.saved_views import visible_views
from supervisor.core.triage.assignment import AssignError, do_assign_task, do_unassign_task

from .freshness import freshness
from .pages.live import live_context
from .pages.overview import alerting_gaps, overview_context
from .pages.task_detail import task_detail_context
from .pages.task_list import task_list_context
from .pages.thread import thread_activity, thread_context
from .snooze_times import snooze_until
from .templatetags.readable import short_label

ACT_PERMISSION = "core.act"
SHORT_ID_MATCHES = 50  # tasks whose id ends like a short id, looked at to find it


def can_act(user) -> bool:
    return user.has_perm(ACT_PERMISSION)


def _wants_partial(request) -> bool:
    # A history restore asks for the whole page even though it comes from htmx.
    return bool(
        request.headers.get("HX-Request") and not request.headers.get("HX-History-Restore-Request")
    )


def _page(request, template: str, partial: str, context: dict, live: dict):
    """The whole page, or for htmx its main partial with the live counters out of band.

    `live` (the change cursor) must be read before `context`: a change that lands in
    between is then sent again on resume rather than missed."""
    if _wants_partial(request):
        response = render(request, f"{template}#{partial}", context)
        extra = render_to_string("base.html#open_flag_count", {"oob": True, **live})
        extra += render_to_string(
            "base.html#messages", {"oob": True, "messages": messages.get_messages(request)}
        )
        extra += render_to_string("base.html#data_as_of", {"oob": True, "freshness": freshness()})
        response.content += extra.encode()
    else:
        response = render(request, template, {**context, **live})
    patch_vary_headers(response, ("HX-Request",))
    return response


@login_required
@require_safe
def overview(request):
    live = live_context("overview")
    context = overview_context(
        can_act(request.user), all_thread_flags=request.GET.get("thread_flags") == "all"
    )
    if not _wants_partial(request):  # shown above the live part: a reload updates it
        is_admin = request.user.has_perm("core.administer")
        context["alerting_gaps"] = alerting_gaps(name_admins=not is_admin)
        context["saved_views"] = list(visible_views(request.user))
    return _page(request, "web/overview.html", "live", context, live)


@login_required
@require_safe
def task_list(request):
    live = live_context("list")
    context = task_list_context(request.GET, request.user)
    context |= {"can_act": can_act(request.user), "action_labels": ACTION_LABELS}
    if not _wants_partial(request):  # above the rows: a filter change leaves them be
        context["saved_views"] = list(visible_views(request.user))
    context["flag_action_labels"] = FLAG_ACTION_LABELS
    response = _page(request, "web/task_list.html", "rows", context, live)
    if context["filter_errors"] and not _wants_partial(request):
        response.status_code = 400  # htmx swaps no 4xx answer: its own request gets a 200
    return response


@login_required
@require_safe
def task_detail(request, pk: int):
    live = live_context("task", pk)
    task = get_object_or_404(
        Task.objects.select_related("namespace", "parent_thread", "child_thread", "assignee"),
        pk=pk,
        known=True,
    )
    context = task_detail_context(
        task, can_act(request.user), timeline_before=request.GET.get("timeline_before")
    )
    return _page(request, "web/task_detail.html", "live", context, live)


@login_required
@require_safe
def task_by_id(request, ref: str):
    """A task by the orchestrator's id, or by the short id the pages show (its last
    part, decoded): several tasks with that short id are listed, none is a 404."""
    tasks = Task.objects.filter(known=True)
    found = list(tasks.filter(task_id=ref).values_list("pk", flat=True)[:1])
    if not found:
        ends = tasks.filter(Q(task_id__endswith=ref) | Q(task_id__endswith=quote(ref, safe="")))
        ends = ends.only("pk", "task_id")[:SHORT_ID_MATCHES]
        found = [task.pk for task in ends if short_label(task.task_id) == ref]
    if len(found) == 1:
        return redirect("web:task-detail", pk=found[0])
    if found:
        return redirect(f"{reverse('web:task-list')}?{urlencode({'q': ref})}")
    raise Http404(f"No task has the id or short id “{ref}”.")


@login_required
@require_safe
def thread(request, pk: int):
    live = live_context("thread", pk)
    thread = get_object_or_404(Thread.objects.select_related("namespace"), pk=pk)
    context = thread_context(thread) | thread_activity(thread)
    return _page(request, "web/thread.html", "live", context, live)


@login_required
@require_POST
def flag_action(request, pk: int):
    """Acknowledge, snooze or resolve a flag (POST, then back to where it is shown)."""
    if not can_act(request.user):
        raise PermissionDenied("your account may look but not act")
    flag = get_object_or_404(Flag, pk=pk)
    action, now = request.POST.get("action"), clock.now()
    actor = f"user:{request.user.get_username()}"
    named = f"“{kind_of(flag.kind).title}”"
    try:
        if action == "acknowledge":
            do_acknowledge_flag(flag, now, by=request.user, actor=actor)
            messages.success(request, f"Acknowledged {named}.")
        elif action == "snooze":
            until = snooze_until(request.POST.get("for"), request.POST.get("until"), now)
            do_snooze_flag(flag, until, now, actor=actor)
            messages.success(request, f"Snoozed {named} until {until:%Y-%m-%d %H:%M} UTC.")
        elif action == "unacknowledge":
            do_unacknowledge_flag(flag, actor=actor)
            messages.success(request, f"No longer acknowledged: {named}.")
        elif action == "unsnooze":
            do_unsnooze_flag(flag, now, actor=actor)
            messages.success(request, f"No longer snoozed: {named}.")
        elif action == "resolve":
            do_resolve_flag_by_hand(
                flag, now, reason=request.POST.get("reason", ""), by=request.user, actor=actor
            )
            messages.success(request, f"Resolved {named}.")
        else:
            raise FlagActionError("unknown action")
    except FlagActionError as exc:
        messages.error(request, f"Could not {action or 'act on'} {named}: {exc}.")
    # Task flags live on their task's page; source and thread flags on the overview.
    if flag.task_id:
        return redirect("web:task-detail", pk=flag.task_id)
    return redirect("web:overview")


PROBLEM_DONE = {"acknowledge": "Acknowledged", "snooze": "Snoozed", "resolve": "Resolved"}


@login_required
@require_POST
def problem_action(request, pk: int):
    """Acknowledge, snooze or resolve a task's problem: the open flags the page showed
    (`flag` fields), one do_* call each. A flag opened since is not touched: nobody saw
    it; a flag resolved since is reported, and a resend changes nothing."""
    if not can_act(request.user):
        raise PermissionDenied("your account may look but not act")
    task = get_object_or_404(Task, pk=pk, known=True)
    verb, now = request.POST.get("action", ""), clock.now()
    shown = [int(v) for v in request.POST.getlist("flag") if v.isascii() and v.isdigit()]
    flags = list(task.flags.filter(pk__in=shown).values_list("pk", flat=True))
    until = None
    try:
        if not flags:
            raise FlagActionError("the page showed no open flag of this task")
        if verb == "snooze":
            until = snooze_until(request.POST.get("for"), request.POST.get("until"), now)
        (outcome,) = do_bulk_flag_action(
            verb,
            flags,
            now,
            by=request.user,
            actor=f"user:{request.user.get_username()}",
            until=until,
            reason=request.POST.get("reason", ""),
        )
    except FlagActionError as exc:
        messages.error(request, f"Could not {verb or 'act on'} the problem: {exc}.")
    else:
        done, already = len(outcome.done), len(outcome.already)
        words = f"{PROBLEM_DONE[verb]} the problem: {done} flag{pluralize(done)}"
        if already:
            words += f" ({already} already {PROBLEM_DONE[verb].lower()})"
        for kind, why in outcome.refused:
            words += f"; “{kind_of(kind).title}” not: {why}"
        messages.success(request, words + ".")
    return redirect("web:task-detail", pk=task.pk)


@login_required
@require_POST
def assign_action(request, pk: int):
    """Give a task's problem to someone (`assignee`: "me" or a user's name), or take it
    away (`action=unassign`). A resend writes nothing and says so."""
    if not can_act(request.user):
        raise PermissionDenied("your account may look but not act")
    task = get_object_or_404(Task, pk=pk, known=True)
    action, chosen = request.POST.get("action"), (request.POST.get("assignee") or "").strip()
    try:
        if action == "unassign":
            done = do_unassign_task(task, by=request.user)
            messages.success(request, "Nobody is assigned now." if done else "Nobody was assigned.")
        elif action == "assign":
            User = get_user_model()
            if chosen == "me":
                user = request.user
            else:
                user = User.objects.filter(**{User.USERNAME_FIELD: chosen}).first()
                if user is None:
                    raise AssignError(f"no user is named “{chosen}”" if chosen else "choose a user")
            done = do_assign_task(task, user, clock.now(), by=request.user)
            name = "you" if user.pk == request.user.pk else user.get_username()
            messages.success(
                request, f"Assigned to {name}." if done else f"Already assigned to {name}."
            )
        else:
            raise AssignError("unknown action")
    except AssignError as exc:
        messages.error(request, f"Could not {action or 'assign'}: {exc}.")
    return redirect("web:task-detail", pk=task.pk)


@login_required
@require_safe
def data_as_of(request):
    """The "data as of" line alone: pages without a live socket (admin, audit) ask for it
    every 30 s, so a source going quiet shows on them too."""
    return render(request, "base.html#data_as_of")
