"""The tab's icon, with the count of open flags nobody has taken up drawn on it.

The count comes in the URL (`?n=3`) from the page that shows it, so the icon needs no
session and no query, and each count is one cacheable image; live.js swaps the URL
when the count changes.
"""

from __future__ import annotations

from django.http import HttpResponse, HttpResponsePermanentRedirect
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

BADGE_MAX = 99

ICON = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">\
<rect x="1" y="1" width="30" height="30" rx="7" fill="#0a58ca"/>{mark}{badge}</svg>"""

# "All good" only while nothing waits; under a count, an eye ring (something to look at).
ALL_GOOD = """<path d="M9 17l5 5 9-11" fill="none" stroke="#fff" stroke-width="3.5" \
stroke-linecap="round" stroke-linejoin="round"/>"""
LOOK = """<circle cx="11" cy="21" r="5" fill="none" stroke="#fff" stroke-width="3"/>"""

BADGE = """<circle cx="{cx}" cy="11" r="{r}" fill="#a40e26" stroke="#fff" stroke-width="1.5"/>\
<text x="{cx}" y="15.5" text-anchor="middle" font-family="Arial,sans-serif" \
font-size="{size}" font-weight="700" fill="#fff">{text}</text>"""


def count_from(value: str | None) -> int:
    """The count asked for; anything that is not a small whole number draws none."""
    if not value or not value.isascii() or not value.isdigit() or len(value) > 9:
        return 0
    return int(value)


def icon_svg(count: int) -> str:
    if count <= 0:
        return ICON.format(mark=ALL_GOOD, badge="")
    text = str(count) if count <= BADGE_MAX else f"{BADGE_MAX}+"
    size = {1: 14, 2: 12}.get(len(text), 9)
    badge = BADGE.format(cx=21, r=10, size=size, text=text)
    return ICON.format(mark=LOOK, badge=badge)


@require_safe
@cache_control(public=True, max_age=86400)
def favicon(request):
    svg = icon_svg(count_from(request.GET.get("n")))
    return HttpResponse(svg, content_type="image/svg+xml")


@require_safe
def favicon_ico(request):
    """Browsers ask for /favicon.ico on pages without a link (the API's, an error)."""
    return HttpResponsePermanentRedirect("/favicon.svg")
