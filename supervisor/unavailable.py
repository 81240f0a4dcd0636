"""The database is down, restarting, or its pool has no connection to give within its
timeout: answer 503 with Retry-After rather than a 500, so that clients retry instead
of giving up (what they sent was not stored; sending it again is safe). Only an error
a retry can cure is answered so (core.storage_errors): a value or an index row the
server refuses is refused again on every retry, and a 503 would hold its sender for ever.

JSON `{"error": ...}` under /api/ and for /metrics, a short page otherwise. Logged as
one warning per outage, not a traceback per request. The API's own exception handler
(supervisor/api/router.py) answers with the same response.
"""

from __future__ import annotations

import logging
import time

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

from supervisor.core.store.storage_errors import curable, driver_errors

log = logging.getLogger(__name__)


# The classes that may be an outage; `curable` tells which instances are.
UNAVAILABLE = (OperationalError, InterfaceError, *driver_errors())
RETRY_AFTER = 3  # seconds: about how long a PostgreSQL restart takes
WARN_EVERY = 60.0  # seconds between warnings while the outage lasts
MESSAGE = f"the database is unavailable; nothing was stored, try again in {RETRY_AFTER} s"
PAGE = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
    "<title>Supervisor is unavailable</title></head><body><h1>Supervisor is unavailable</h1>"
    f"<p>Its database cannot be reached just now. Try again in {RETRY_AFTER} seconds.</p>"
    "</body></html>"
)

_last_warning = 0.0


def unavailable_response(request: HttpRequest, exc: Exception) -> HttpResponse:
    """The 503 for a database error, logged at most once a minute; an error no retry
    cures is raised again (the API's handler calls this for any of UNAVAILABLE)."""
    if not curable(exc):
        raise exc
    global _last_warning
    now = time.monotonic()
    if now - _last_warning >= WARN_EVERY:
        _last_warning = now
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        log.warning("database unavailable, answering 503 (%s): %s", request.path, reason)
    if request.path.startswith("/api/") or request.path == "/metrics":
        response = JsonResponse({"error": MESSAGE}, status=503)
    else:
        response = HttpResponse(PAGE, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER)
    # Django would log every 5xx answer again as an error ("Service Unavailable: ...").
    response._has_been_logged = True
    return response


class DatabaseUnavailableMiddleware:
    """Last in MIDDLEWARE: its process_exception sees a view's exception first."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if isinstance(exc, UNAVAILABLE) and curable(exc):
            return unavailable_response(request, exc)
        return None
