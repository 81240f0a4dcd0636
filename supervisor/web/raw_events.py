"""The raw events behind a flag, as pretty-printed JSON (core.flag_events).

The task page folds them under each flag and fetches them only when the operator opens
that fold (htmx, on toggle), so the page costs no more to draw; without script the fold
links here and the same list is a page of its own. Anyone who may read the task page
may read these: they are what its evidence already summarizes.
"""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_safe

from supervisor.core.flags.events import LIMIT, as_sent, raw_events
from supervisor.core.models import Flag

from .pages.flag_cards import flag_entry


def pretty(event) -> str:
    """An event as the contract shapes it, indented; the template escapes it as any text."""
    return json.dumps(as_sent(event), indent=2, ensure_ascii=False)


@login_required
@require_safe
def flag_events(request, pk: int):
    flag = get_object_or_404(Flag.objects.select_related("task", "namespace"), pk=pk)
    if flag.task_id is not None and not flag.task.known:
        raise Http404("No such flag.")
    raw = raw_events(flag)
    context = {
        "flag": flag,
        "entry": flag_entry(flag),
        "named": [(e, pretty(e)) for e in raw.named],
        "others": [(e, pretty(e)) for e in raw.others],
        "left_off": raw.left_off,
        "missing": raw.missing,
        "limit": LIMIT,
    }
    partial = request.headers.get("HX-Request") and not request.headers.get(
        "HX-History-Restore-Request"
    )
    template = "web/flag_events.html#events" if partial else "web/flag_events.html"
    response = render(request, template, context)
    patch_vary_headers(response, ("HX-Request",))
    return response
