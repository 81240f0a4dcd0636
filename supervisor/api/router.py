"""The JSON API of contract §6, with its OpenAPI document at /api/v1/openapi.json."""

from django.http import Http404, JsonResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from . import actions, events, flags, tasks

api = NinjaAPI(
    title="Supervisor",
    version="1",
    urls_namespace="api",
    docs_url="/docs",
    description="Events in, flags out: see docs/event-contract.md.",
)
api.add_router("", events.router)
# Before tasks: its `tasks/{path}` would otherwise swallow `tasks/{id}/actions`.
api.add_router("", actions.router)
api.add_router("", tasks.router)
api.add_router("", flags.router)


@api.exception_handler(AuthenticationError)
def unauthorized(request, exc):
    return JsonResponse(
        {"error": "missing or invalid bearer token (Authorization: Bearer <token>)"}, status=401
    )


@api.exception_handler(HttpError)
def http_error(request, exc):
    return JsonResponse({"error": str(exc)}, status=exc.status_code)


@api.exception_handler(ValidationError)
def invalid(request, exc):
    return JsonResponse({"error": "invalid request", "details": exc.errors}, status=400)


@api.exception_handler(Http404)
def not_found(request, exc):
    return JsonResponse({"error": str(exc) or "not found"}, status=404)
