"""Cancel, continue and deliver from the task page: a preview first (GET), then the
confirmed request (POST), which is queued for a worker and followed live on the page.

The confirm form carries an idempotency key made when the preview was shown, so a
double submit asks once; a second delivery of the same run is refused with a reason.
It also carries the preview's digest: when what would be sent is no longer what was
shown, nothing is sent and the new preview is shown instead (409).
"""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_http_methods

from supervisor.core.actions.advice import ACTION_LABELS
from supervisor.core.actions.previews import (
    KINDS,
    ActionRefused,
    PreviewChanged,
    preview_action,
)
from supervisor.core.actions.writers import do_request_action
from supervisor.core.models import Task

from .views import can_act


@login_required
@require_http_methods(["GET", "POST"])
def task_action(request, pk: int, kind: str):
    if kind not in KINDS:
        raise Http404(f"no action {kind!r}")
    if not can_act(request.user):
        raise PermissionDenied("your account may look but not act")
    task = get_object_or_404(
        Task.objects.select_related("namespace", "parent_thread", "child_thread"),
        pk=pk,
        known=True,
    )
    if request.method == "POST":
        return _confirm(request, task, kind)
    message = request.GET.get("message", "").strip()
    preview = preview_action(task, kind, run=request.GET.get("run") or None, message=message)
    return _show_preview(request, task, preview, message)


def _show_preview(request, task: Task, preview, message: str, *, changed: bool = False):
    context = {
        "task": task,
        "preview": preview,
        "label": ACTION_LABELS[preview.kind],
        "message": message,
        "key": f"web-{uuid.uuid4().hex}",
        "changed": changed,
    }
    wants_partial = request.headers.get("HX-Request") and not request.headers.get(
        "HX-History-Restore-Request"
    )
    template = "web/action_preview.html" + ("#preview" if wants_partial else "")
    response = render(request, template, context, status=409 if changed else 200)
    if changed and wants_partial:
        # htmx swaps no 4xx answer: the new preview goes where the old one was, as a 200.
        response.status_code = 200
        response["HX-Retarget"] = "#action-preview"
        response["HX-Reswap"] = "innerHTML show:#action-preview:top"
    patch_vary_headers(response, ("HX-Request",))
    return response


def _confirm(request, task: Task, kind: str):
    post = request.POST
    message = post.get("message") or None
    try:
        action, created = do_request_action(
            task,
            kind,
            actor=f"user:{request.user.get_username()}",
            user=request.user,
            run=post.get("run") or None,
            message=message,
            reason=post.get("reason") or None,
            key=(post.get("key") or "")[:200] or None,
            # A form without it is from before previews had digests: show it anew.
            previewed=post.get("preview") or "(none)",
        )
    except PreviewChanged as exc:
        return _show_preview(request, task, exc.preview, message or "", changed=True)
    except ActionRefused as exc:
        messages.error(request, f"Could not {kind}: {exc}.")
    else:
        # A new action's state shows in the task page's banner, which follows it live;
        # a message here would keep saying "queued" after it was sent.
        if not created:
            messages.info(request, f"Already asked (action {action.pk}, {action.state}).")
    return redirect(reverse("web:task-detail", args=[task.pk]) + "#actions")
