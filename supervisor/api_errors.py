"""Every answer under /api/ is JSON, `{"error": ...}`: its clients read JSON, and an HTML
page (Django's 404, 405, 413 or 500, a 405 from ninja) would be an error of their own.
The operations answer their refusals themselves (supervisor/api/router.py); this edge
rewrites what reaches a client without them, keeping the answer's status and headers
(Allow on a 405, Retry-After)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import csrf

PREFIX = "/api/"
JSON = "application/json"


def _message(request: HttpRequest, response: HttpResponse) -> str:
    status = response.status_code
    if status == 404:
        return f"no API path {request.path} (see /api/v1/openapi.json)"
    if status == 405:
        allowed = response.get("Allow", "")
        return f"{request.method} is not allowed on {request.path}; allowed: {allowed}"
    if status == 413:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return f"the body is larger than {limit} bytes, the most one request may send"
    if status == 403:
        return "forbidden: the request was refused before any operation read it"
    if status >= 500:
        return "Supervisor failed while answering; the error is logged for the admins"
    return f"the request could not be read ({response.reason_phrase})"


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: under /api/ the reason in JSON, elsewhere Django's page."""
    if request.path.startswith(PREFIX):
        return JsonResponse({"error": f"CSRF check failed: {reason}"}, status=403)
    return csrf.csrf_failure(request, reason)


def as_json(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    answer = JsonResponse({"error": _message(request, response)}, status=response.status_code)
    for header, value in response.headers.items():
        if header.lower() not in {"content-type", "content-length"}:
            answer[header] = value
    answer.cookies = response.cookies
    if getattr(response, "_has_been_logged", False):
        answer._has_been_logged = True
    return answer


class ApiErrorsAsJsonMiddleware:
    """Early in MIDDLEWARE: it sees every answer below it, the error handlers' included."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            request.path.startswith(PREFIX)
            and response.status_code >= 400
            and not response.streaming
            and not response.get("Content-Type", "").startswith(JSON)
        ):
            return as_json(request, response)
        return response
