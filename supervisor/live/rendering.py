"""Render a note for one kind of page, once per process for all its sockets."""

from __future__ import annotations

from collections import OrderedDict

from supervisor.web import fragments

CACHE_SIZE = 2048
_cache: OrderedDict = OrderedDict()


def render_note(note: dict, view: str, subject: int, can_act: bool) -> str | None:
    """The frame for `note` on a page (None when the note does not concern it)."""
    key = (note["id"], view, subject, can_act)
    if key in _cache:
        _cache.move_to_end(key)
        return _cache[key]
    html = _render(note, view, subject, can_act)
    _cache[key] = html
    if len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return html


def _render(note: dict, view: str, subject: int, can_act: bool) -> str | None:
    parts: list[str] = []
    if view == "list":
        parts += [row for pk in note["tasks"] if (row := fragments.task_row(pk))]
    elif view == "task":
        if subject not in note["tasks"]:
            return None
        parts += fragments.task_detail(subject, can_act)
    elif view == "thread":
        if subject not in note["threads"] and not note["tasks"]:
            return None
        parts += fragments.thread_tree(subject)
    else:
        parts += fragments.overview(can_act)
    if note["flag"]:
        parts.append(fragments.flag_opened(note["flag"]))
    return fragments.frame(note["id"], parts)
