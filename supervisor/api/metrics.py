"""GET /metrics: the Prometheus figures, for a bearer token with the `metrics` scope.

No session: a scraper holds a source's token, found by its hash like every other token
(`source_for_token`), so a revoked or rotated token stops working at once. A session is
not enough either (a logged-in browser gets 401). Only GET and HEAD are answered, so the
CSRF check never applies to a scrape."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from supervisor.core.access.sources import source_for_token
from supervisor.core.queries.metrics import collect

from .exposition import CONTENT_TYPE, render
from .scopes import need_of

[SCOPE] = need_of("GET", "/metrics").scopes


def _refuse(status: int, text: str) -> HttpResponse:
    response = HttpResponse(text + "\n", status=status, content_type="text/plain; charset=utf-8")
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


def _bearer(request: HttpRequest) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    token = _bearer(request)
    if token is None:
        return _refuse(401, "a bearer token with the 'metrics' scope is needed")
    source = source_for_token(token)
    if source is None:
        return _refuse(401, "this token is unknown or revoked")
    if SCOPE not in source.scope_set:
        return _refuse(403, "this token lacks the 'metrics' scope")
    response = HttpResponse(render(collect()), content_type=CONTENT_TYPE)
    response["Cache-Control"] = "no-store"
    return response
