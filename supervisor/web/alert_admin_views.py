"""The alert admin pages: channels (with a test send), routes, and the outbox of
notifications (with "retry now", and "send again" for a failed one). Admins only, as
the other admin pages: forms post and redirect with a message. A channel's target is a
secret: only `masked()` is shown."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import OuterRef, Subquery
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from supervisor.core import clock
from supervisor.notify.channels import do_send_test, target_refusal
from supervisor.notify.edits import do_save_channel, do_save_route, do_set_channel_enabled
from supervisor.notify.models import Channel, Notification, Route
from supervisor.notify.outbox import RETRYABLE, do_retry_now

from .admin_views import administer_required
from .alert_forms import ChannelForm, RouteForm

NOTIFICATION_PAGE = 100
NOTIFICATION_STATES = (
    Notification.PENDING,
    Notification.SENDING,
    Notification.SENT,
    Notification.FAILING,
    Notification.FAILED,
)

# --- channels -----------------------------------------------------------------------


@administer_required
@require_safe
def channels(request):
    latest = Notification.objects.filter(channel=OuterRef("pk")).order_by("-created_at", "-pk")
    rows = Channel.objects.annotate(
        last_state=Subquery(latest.values("state")[:1]),
        last_at=Subquery(latest.values("created_at")[:1]),
    ).order_by("name")
    return render(request, "notify/admin/channels.html", {"nav": "channels", "channels": rows})


def _channel_form_page(request, form: ChannelForm, channel: Channel | None = None):
    return render(
        request,
        "notify/admin/channel_form.html",
        {"nav": "channels", "form": form, "channel": channel},
    )


@administer_required
@require_http_methods(["GET", "HEAD", "POST"])
def channel_create(request):
    form = ChannelForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        channel = do_save_channel(form.save(commit=False), by=request.user)
        messages.success(request, f"Created the channel {channel.name} ({channel.masked()}).")
        return redirect("notify:admin-channels")
    return _channel_form_page(request, form)


@administer_required
@require_http_methods(["GET", "HEAD", "POST"])
def channel_edit(request, pk: int):
    channel = get_object_or_404(Channel, pk=pk)
    form = ChannelForm(request.POST if request.method == "POST" else None, instance=channel)
    if request.method == "POST" and form.is_valid():
        channel = do_save_channel(form.save(commit=False), by=request.user)
        messages.success(request, f"Saved the channel {channel.name}.")
        return redirect("notify:admin-channels")
    return _channel_form_page(request, form, get_object_or_404(Channel, pk=pk))


@administer_required
@require_POST
def channel_enabled(request, pk: int):
    channel = get_object_or_404(Channel, pk=pk)
    enabled = request.POST.get("enabled") == "1"
    do_set_channel_enabled(channel, enabled, by=request.user)
    word = "enabled" if enabled else "disabled"
    messages.success(request, f"The channel {channel.name} is {word}.")
    return redirect("notify:admin-channels")


@administer_required
@require_POST
def channel_test(request, pk: int):
    channel = get_object_or_404(Channel, pk=pk)
    problem = target_refusal(channel.kind, channel.target)
    if problem:  # saved before the guard, or before the setting changed
        messages.error(request, f"No test message was sent to {channel.name}: {problem}.")
        return redirect("notify:admin-channels")
    note = do_send_test(channel, clock.now())
    if note is None:
        messages.error(request, f"No test message was queued for {channel.name}; try again.")
    else:
        messages.success(
            request,
            f"A test message to {channel.name} was queued (key {note.key}); "
            "see Notifications for how it went.",
        )
    return redirect("notify:admin-channels")


# --- routes -------------------------------------------------------------------------


@administer_required
@require_safe
def routes(request):
    rows = Route.objects.select_related("channel", "escalate_to").order_by("channel__name", "pk")
    return render(request, "notify/admin/routes.html", {"nav": "routes", "routes": rows})


def _route_form_page(request, form: RouteForm, route: Route | None = None):
    return render(
        request, "notify/admin/route_form.html", {"nav": "routes", "form": form, "route": route}
    )


@administer_required
@require_http_methods(["GET", "HEAD", "POST"])
def route_create(request):
    form = RouteForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        route = do_save_route(form.save(commit=False), by=request.user)
        messages.success(request, f"Created {route}.")
        return redirect("notify:admin-routes")
    return _route_form_page(request, form)


@administer_required
@require_http_methods(["GET", "HEAD", "POST"])
def route_edit(request, pk: int):
    route = get_object_or_404(Route, pk=pk)
    form = RouteForm(request.POST if request.method == "POST" else None, instance=route)
    if request.method == "POST" and form.is_valid():
        route = do_save_route(form.save(commit=False), by=request.user)
        messages.success(request, f"Saved {route}.")
        return redirect("notify:admin-routes")
    return _route_form_page(request, form, route)


# --- notifications ------------------------------------------------------------------


@administer_required
@require_safe
def notifications(request):
    state = request.GET.get("state", "")
    rows = Notification.objects.select_related("channel")
    if state in NOTIFICATION_STATES:
        rows = rows.filter(state=state)
    else:
        state = ""
    page = list(rows.order_by("-created_at", "-pk")[:NOTIFICATION_PAGE])
    return render(
        request,
        "notify/admin/notifications.html",
        {
            "nav": "notifications",
            "notes": page,
            "state": state,
            "states": NOTIFICATION_STATES,
            "retryable": RETRYABLE,
            "page_size": NOTIFICATION_PAGE,
        },
    )


@administer_required
@require_POST
def notification_retry(request, pk: int):
    note = get_object_or_404(Notification, pk=pk)
    was = note.state
    if do_retry_now(note, clock.now()):
        again = " with all its attempts back" if was == Notification.FAILED else ""
        messages.success(request, f"Notification {note.key} is due now{again} and was enqueued.")
    else:
        messages.error(
            request, f"Notification {note.key} is {note.state}: there is nothing to retry."
        )
    state = request.POST.get("state", "")
    if state in NOTIFICATION_STATES:
        return redirect(reverse("notify:admin-notifications") + f"?state={state}")
    return redirect("notify:admin-notifications")
