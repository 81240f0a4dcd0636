"""Render live frames: what a kind of page shows of some changes, once per process.

A `Page` is what decides a frame's HTML: the page kind, its subject (task and thread
pages) and whether its user may act (the overview and the task page carry action forms
then). Sockets of the same Page get the same frame and no other socket does: the
relay renders each batch of changes once per Page open in the process (`render_frame`),
and a socket's catch-up after a resume renders one frame per change (`render_note`),
cached so that its sockets share it.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

from supervisor.web import fragments

CACHE_SIZE = 2048
_cache: OrderedDict = OrderedDict()
MISSING = object()


class Page(NamedTuple):
    view: str  # overview, list, task, thread
    subject: int  # the task or thread pk; 0 for the overview and the list
    can_act: bool  # only for the pages whose HTML depends on it


def page_of(view: str, subject: int, can_act: bool) -> Page:
    """The Page a socket shows. The list and thread pages render the same whatever the
    role, and the overview and list have no subject: their sockets share one Page."""
    return Page(
        view,
        subject if view in {"task", "thread"} else 0,
        can_act if view in {"overview", "task"} else False,
    )


def concerns(note: dict, page: Page) -> bool:
    if note["kind"].startswith("silence."):
        return True  # a silence may quiet any task's flags or let them go (rare: cheap)
    if page.view == "task":
        return page.subject in note["tasks"]
    if page.view == "thread":
        return page.subject in note["threads"] or bool(note["tasks"])
    return True  # the overview and the list show every change


def render_frame(notes: list[dict], page: Page) -> str | None:
    """One frame for several changes (those the relay read at once: an evaluation's, an
    ingest's): the page's parts as they are now, a notice for each flag opened, and the
    cursor of the last change. None when none of them concerns the page."""
    concerning = [note for note in notes if concerns(note, page)]
    if not concerning:
        return None
    tasks = sorted({pk for note in concerning for pk in note["tasks"]})
    flags = [note["flag"] for note in concerning if note["flag"]]
    return _render(notes[0]["id"], notes[-1]["id"], tasks, flags, page)


def render_note(note: dict, page: Page) -> str | None:
    """The frame for one change (None when it does not concern the page)."""
    key = (note["id"], page)
    html = cached_note(note, page)
    if html is not MISSING:
        return html
    html = render_frame([note], page)
    _cache[key] = html
    if len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return html


def cached_note(note: dict, page: Page):
    """The cached frame for one change, or MISSING: a look-up cheap enough for the event
    loop (the cache is written by one thread, asgiref's; each operation here is atomic,
    and an entry evicted meanwhile is a miss)."""
    key = (note["id"], page)
    try:
        html = _cache[key]
        _cache.move_to_end(key)
    except KeyError:
        return MISSING
    return html


def _render(first_id: int, change_id: int, tasks: list[int], flags: list[int], page: Page) -> str:
    parts: list[str] = []
    if page.view == "list":
        parts += [row for pk in tasks if (row := fragments.task_row(pk))]
    elif page.view == "task":
        parts += fragments.task_detail(page.subject, page.can_act)
    elif page.view == "thread":
        parts += fragments.thread_tree(page.subject)
    else:
        parts += fragments.overview(page.can_act)
    parts += [fragments.flag_opened(flag) for flag in flags]
    return fragments.frame(change_id, parts, first_id)
