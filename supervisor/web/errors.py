"""The 400, 403, 404 and 500 pages: the site's own header and navigation, what happened in
one sentence, and where to go from there.

To htmx (a filter, a form, the slow poll) the same sentence comes alone, retargeted to
the page's messages area (live.js lets htmx swap it in): a whole page embedded in the
part it was refreshing would help nobody. The 500 page is rendered without a request
context or a query: the database may be what failed.
"""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse, HttpResponseServerError
from django.shortcuts import render
from django.template import loader

from .unstorable_input import UnstorableValue


def _for_htmx(request) -> bool:
    return bool(request.headers.get("HX-Request"))


def _retargeted(response: HttpResponse) -> HttpResponse:
    response["HX-Retarget"] = "#messages"
    response["HX-Reswap"] = "innerHTML"
    return response


def _page(request, status: int, exception=None, template: str = "") -> HttpResponse:
    template = template or f"{status}.html"
    # A PermissionDenied's words are ours ("this page is for admins"), as are an
    # UnstorableValue's; a 404's may name a model or the URL patterns tried, and a
    # SuspiciousOperation's the setting it broke: not shown.
    ours = status == 403 or isinstance(exception, UnstorableValue)
    reason = str(exception or "") if ours else ""
    context = {"reason": reason, "too_big": status == 413}
    if _for_htmx(request):
        return _retargeted(render(request, f"{template}#what", context, status=status))
    return render(request, template, context, status=status)


def bad_request(request, exception=None):
    # A body over DATA_UPLOAD_MAX_MEMORY_SIZE is too large, not unreadable.
    status = 413 if isinstance(exception, RequestDataTooBig) else 400
    return _page(request, status, exception, template="400.html")


def permission_denied(request, exception=None):
    return _page(request, 403, exception)


def page_not_found(request, exception=None):
    return _page(request, 404, exception)


def server_error(request):
    # As Django's own handler500: no context processors, no request, no query.
    template = loader.get_template("500.html#what" if _for_htmx(request) else "500.html")
    response = HttpResponseServerError(template.render())
    return _retargeted(response) if _for_htmx(request) else response
