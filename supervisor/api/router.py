"""The JSON API of contract §6, with its OpenAPI document at /api/v1/openapi.json and
the browsable page of it at /api/v1/docs."""

from django.http import Http404, JsonResponse
from django.views.decorators.http import require_safe
from ninja import NinjaAPI, Router
from ninja.errors import AuthenticationError, HttpError, ValidationError

from supervisor.core.contract.events import event_json_schemas
from supervisor.unavailable import UNAVAILABLE, unavailable_response

from . import actions, converters, events, flags, silences, tasks  # noqa: F401 - converters registers
from .docs import ReadersDocs

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


class SupervisorAPI(NinjaAPI):
    def get_openapi_schema(self, *args, **kwargs):
        # The events body refers to `Event`: the contract's pydantic models, not ninja's.
        schema = super().get_openapi_schema(*args, **kwargs)
        schema.setdefault("components", {}).setdefault("schemas", {}).update(event_json_schemas())
        return schema


api = SupervisorAPI(
    title="Supervisor",
    version="1",
    urls_namespace="api",
    # The document is public (it describes the contract, holds no data); its page, Swagger
    # UI served from static/vendor (ninja's own loads a CDN the CSP refuses), is for
    # readers only (docs.py). GET and HEAD only.
    docs=ReadersDocs(),
    docs_url="/docs",
    docs_decorator=require_safe,
    description="Events in, flags out: see docs/event-contract.md.",
)
api.add_router("", events.router)
# Before tasks: its `tasks/{path}` would otherwise swallow `tasks/{id}/actions`.
api.add_router("", actions.router)
api.add_router("", tasks.router)
api.add_router("", flags.router)
api.add_router("", silences.router)
# Last: a path no operation has is a JSON 404 too, not Django's HTML page.
unknown = Router(auth=None)


@unknown.api_operation(METHODS, "/{anytext:rest}", include_in_schema=False)
def no_such_path(request, rest: str):
    return JsonResponse(
        {"error": f"no API path /api/v1/{rest} (see /api/v1/openapi.json)"}, status=404
    )


api.add_router("", unknown)


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
    # The error names each problem (where: what); the details keep pydantic's own list.
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc'][1:]) or e['loc'][0]}: "
        + str(e["msg"]).removeprefix("Value error, ")
        for e in exc.errors
    )
    return JsonResponse(
        {"error": f"invalid request: {problems}", "details": exc.errors}, status=400
    )


@api.exception_handler(Http404)
def not_found(request, exc):
    return JsonResponse({"error": str(exc) or "not found"}, status=404)


# Database down: the middleware's 503 (with DEBUG, ninja would answer a 500 first).
for _unavailable in UNAVAILABLE:
    api.add_exception_handler(_unavailable, unavailable_response)
