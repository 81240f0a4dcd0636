"""Words an operator reads instead of codes: ages instead of timestamps, short labels
instead of ids, flag kinds by name. The exact value stays on hover (and, for ids, one
click from the clipboard), so nothing is hidden, only put second.

live.js keeps every `<time data-ago>` current with the same wording (`agoWords`), and
shows each `<time>` in the zone the operator chose (web/time_zones.py): the text in that
zone, the other on hover. Every time is written here in UTC, with its shape
(`data-shape`) so the script writes the local one alike.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import unquote

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from supervisor.core import clock
from supervisor.core.flags.kinds import kind_of, titles

register = template.Library()


def age_words(seconds: float) -> str:
    """A span of time in the fewest words that still tell two ages apart at a glance."""
    s = int(abs(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        hours, minutes = s // 3600, s % 3600 // 60
        return f"{hours} h {minutes} min" if hours < 10 and minutes else f"{hours} h"
    days = s // 86400
    return f"{days} day{'s' if days != 1 else ''}"


# How much of a moment each shape shows; live.js's `zoneText` writes the same shapes.
SHAPES = {
    "seconds": "%Y-%m-%d %H:%M:%S UTC",
    "minutes": "%Y-%m-%d %H:%M UTC",
    "time": "%H:%M:%S.%f",  # the task timeline's, under a heading of its (UTC) day
}


def utc_text(at: datetime, shape: str = "seconds") -> str:
    text = at.astimezone(UTC).strftime(SHAPES[shape])
    return text[:12] if shape == "time" else text


def iso_utc(at: datetime) -> str:
    return at.astimezone(UTC).isoformat()


@register.filter
def ago(at: datetime | None, now: datetime | None = None):
    """`<time>` with the age ("5 min ago", "in 2 h") and the UTC time on hover."""
    if not at:
        return mark_safe('<span class="muted">never</span>')
    seconds = ((now or clock.now()) - at).total_seconds()
    words = f"{age_words(seconds)} ago" if seconds >= 0 else f"in {age_words(seconds)}"
    return format_html(
        '<time datetime="{}" title="{}" data-ago>{}</time>', iso_utc(at), utc_text(at), words
    )


@register.filter
def utc(at: datetime | None, shape: str = "seconds"):
    """`<time>` with the UTC time, for where the moment matters more than the age; to the
    second, or `utc:"minutes"`, or `utc:"time"` (the time of day to the millisecond)."""
    if not at:
        return mark_safe('<span class="muted">never</span>')
    text = utc_text(at, shape)
    return format_html(
        '<time datetime="{}" title="{}" data-shape="{}">{}</time>', iso_utc(at), text, shape, text
    )


def short_label(identifier: str) -> str:
    """The last part of an orchestrator's id, decoded: `node:delegated-task:command%3A
    mcp%3A5b1c%3Adelegate-task%3Aretry-port` is `retry-port`. Ids are ':'-paths whose
    last part names the thing; the prefix repeats on every row."""
    text = unquote(identifier or "")
    last = text.rstrip(":").rsplit(":", 1)[-1]
    return last or text


@register.filter
def short_id(identifier: str | None):
    """A short label for an id, the full id on hover and a copy button (with script)."""
    if not identifier:
        return mark_safe('<code class="id">?</code>')
    label = short_label(identifier)
    return format_html(
        '<code class="id" title="{}">{}</code>'
        '<button type="button" class="copy js-only" data-copy="{}" hidden'
        ' aria-label="Copy the full id {}">Copy</button>',
        identifier,
        label,
        identifier,
        identifier,
    )


@register.filter
def whole_id(identifier: str | None):
    """A whole id, decoded where the orchestrator percent-encodes its parts; as written
    on hover, and that form is what the copy button copies (it is what matches)."""
    if not identifier:
        return mark_safe('<code class="id">?</code>')
    shown = unquote(identifier)
    if shown == identifier:
        return format_html('<code class="id">{}</code>', identifier)
    return format_html(
        '<code class="id" title="as the orchestrator writes it: {}">{}</code>'
        '<button type="button" class="copy js-only" data-copy="{}" hidden'
        ' aria-label="Copy the id as the orchestrator writes it">Copy</button>',
        identifier,
        shown,
        identifier,
    )


@register.filter
def thread_label(thread) -> str:
    """A thread by its title, else by the short form of its id."""
    if thread is None:
        return "?"
    return (thread.title or "").strip()[:60] or short_label(thread.thread_id)


@register.filter
def kind_chip(kind: str):
    """A flag kind in words, its code on hover."""
    return format_html(
        '<span class="flag" title="{}">{}</span>', f"flag kind: {kind}", kind_of(kind).title
    )


@register.filter
def kind_title(kind: str) -> str:
    return kind_of(kind).title


@register.filter
def kind_titles(kinds) -> str:
    return titles(kinds)


@register.inclusion_tag("web/_problem_chip.html")
def problem_chip(problem):
    """A task's problem in one cell: severity, headline, the other kinds as facets."""
    return {"problem": problem}
