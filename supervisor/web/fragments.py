"""The live HTML: out-of-band swaps for pages that follow the change log.

The only place the server renders live HTML. Each function reads the database and
renders the same template partials the views render (no request: forms carry an empty
`{% csrf_token %}`, and htmx adds the token from `<body hx-headers>` when they post).
Every top-level element returned has `hx-swap-oob`, so a frame is a list of them.

Table rows: ws.js parses a frame with `htmx.makeFragment`, which wraps it in a
`<template>`; there a `<tr>` parses as a row only when it comes before any element that
is not table content (after a `<div>`, the parser drops `<tr>`/`<td>` tags). ws.js swaps
only the frame's top-level elements, so a `<tr>` wrapped in a `<template>` of its own
would not be swapped. `frame()` therefore puts row parts first.
"""

from __future__ import annotations

from django.template.loader import render_to_string
from django.urls import reverse

from supervisor.core.flags.kinds import kind_of
from supervisor.core.models import Flag, Thread

from .freshness import freshness
from .pages.live import open_flag_count
from .pages.overview import overview_context
from .pages.task_detail import task_detail_context
from .pages.task_list import known_task, task_row_context
from .pages.thread import thread_activity, thread_context


def _render(template: str, context: dict) -> str:
    return render_to_string(template, {**context, "oob": True}).strip()


def _is_row(part: str) -> bool:
    return part.lstrip()[:3].lower() == "<tr"


def frame(change_id: int, parts: list[str], first_id: int | None = None) -> str:
    """One live message: the parts (rows first), the cursor, the open-flag count and how
    fresh the data is. The cursor also names the frame's first change (`data-from`), so a
    client can tell that no change fell between two frames (bench/live_soak.py does)."""
    ordered = [p.strip() for p in parts if p and _is_row(p)]
    ordered += [p.strip() for p in parts if p and not _is_row(p)]
    first = int(change_id if first_id is None else first_id)
    ordered.append(
        f'<div id="live-cursor" data-change="{int(change_id)}" data-from="{first}" '
        'hx-swap-oob="true" hidden></div>'
    )
    ordered.append(
        _render("base.html#open_flag_count", {"live": {"open_flags": open_flag_count()}})
    )
    ordered.append(_render("base.html#data_as_of", {"freshness": freshness()}))
    return "\n".join(ordered)


def task_row(task_pk: int) -> str | None:
    """The list's row of a task, `<tr id="task-row-PK" hx-swap-oob="true">`; None when the
    task is not known."""
    context = task_row_context(task_pk)
    if context is None:
        return None
    return _render("web/task_list.html#row", context)


def task_detail(task_pk: int, can_act: bool) -> list[str]:
    """The task page's parts: header (status), results (given vs latest, with the diff),
    actions (suggested ones and their outcomes), flags (with action forms when
    `can_act`), timeline. Empty when the task is not known."""
    task = known_task(task_pk)
    if task is None:
        return []
    context = task_detail_context(task, can_act)
    return [
        _render(f"web/task_detail.html#{part}", context)
        for part in ("header", "results", "actions", "flags", "timeline")
    ]


def overview(can_act: bool) -> list[str]:
    """The overview's parts: silent sources, the tasks needing action, thread flags,
    counts, what is taken up and the latest tasks, sources."""
    context = overview_context(can_act)
    parts = ("alerts", "needing", "thread_flags", "counts", "later", "sources")
    return [_render(f"web/overview.html#{part}", context) for part in parts]


def thread_tree(thread_pk: int) -> list[str]:
    """The thread page's parts: its flags, the tree of delegated tasks, its runs and
    its timeline."""
    thread = Thread.objects.select_related("namespace").filter(pk=thread_pk).first()
    if thread is None:
        return []
    context = thread_context(thread) | thread_activity(thread)
    parts = ("thread_flags", "tree", "thread_runs", "thread_timeline")
    return [_render(f"web/thread.html#{part}", context) for part in parts]


def flag_opened(flag_pk: int) -> str:
    """`<div id="flag-opened" data-flag data-kind data-title data-url>` for live.js to
    turn into a browser notification; "" when the flag does not exist."""
    flag = Flag.objects.select_related("task").filter(pk=flag_pk).first()
    if flag is None:
        return ""
    if flag.task is not None:
        title = flag.task.title or flag.task.task_id
        url = reverse("web:task-detail", args=[flag.task.pk])
    elif flag.subject_type == "thread":
        title = f"thread {flag.subject_id}"
        pk = (
            Thread.objects.filter(namespace_id=flag.namespace_id, thread_id=flag.subject_id)
            .values_list("pk", flat=True)
            .first()
        )
        url = reverse("web:thread", args=[pk]) if pk else reverse("web:overview")
    else:
        title = f"{flag.subject_type} {flag.subject_id}"
        url = reverse("web:overview")
    return _render(
        "web/_flag_opened.html",
        {"flag": flag, "title": title, "url": url, "words": kind_of(flag.kind)},
    )
