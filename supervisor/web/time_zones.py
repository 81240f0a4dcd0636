"""Which zone the pages show times in: UTC (the default) or the browser's own.

The server always writes UTC (templatetags/readable.py: `<time datetime="…">`); the
operator's choice is a cookie, put on `<html data-times>`, and static/js/live.js
rewrites each time into the browser's zone when it says "local", the other zone on
hover either way. Without script the choice is still stored, and times stay UTC.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

COOKIE = "supervisor-times"
UTC, LOCAL = "utc", "local"
CHOICES = ((UTC, "UTC"), (LOCAL, "My browser’s zone"))
YEAR = 365 * 24 * 3600


def chosen(request) -> str:
    value = request.COOKIES.get(COOKIE)
    return value if value in dict(CHOICES) else UTC


def times_choice(request) -> dict:
    """Context processor: the zone chosen, and the choices for the header's form."""
    return {"times": chosen(request), "time_choices": CHOICES}


@login_required
@require_POST
def choose_times(request):
    """Store the operator's choice (a display preference of this browser, not an act on
    data: nothing is audited) and go back to the page it was made on."""
    back = request.POST.get("next") or "/"
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        back = "/"
    response = HttpResponseRedirect(back)
    value = request.POST.get("times")
    if value in dict(CHOICES):
        # Read by live.js too (it sets it when the select changes): not HttpOnly.
        response.set_cookie(COOKIE, value, max_age=YEAR, samesite="Lax", secure=request.is_secure())
    return response
