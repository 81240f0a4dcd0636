"""The browsable API page at /api/v1/docs: Swagger UI from static/vendor/swagger-ui,
shown to whoever may read the API.

Ninja serves it at its `docs_url` through `render_page` below. The OpenAPI document
itself stays public, so the check is here rather than in the api's `docs_decorator`,
which wraps both views.
"""

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from ninja.errors import AuthenticationError, HttpError
from ninja.openapi.docs import DocsBase

from .scopes import need_of


def refusal(request: HttpRequest, api) -> HttpResponse | None:
    """None when the read API would let `request` in; else the API's own answer (a
    token without `read` is 403, a revoked or unknown one 401), or the log-in page for
    a browser that sent no credential at all."""
    for reader in need_of("GET", "/api/v1/docs").guards():
        try:
            if reader(request):
                return None
        except HttpError as exc:
            return api.on_exception(request, exc)
    if "Authorization" in request.headers:
        return api.on_exception(request, AuthenticationError())
    return redirect_to_login(request.get_full_path())


class ReadersDocs(DocsBase):
    template = "api/docs.html"

    def render_page(self, request: HttpRequest, api, **kwargs) -> HttpResponse:
        refused = refusal(request, api)
        if refused is not None:
            return refused
        return render(request, self.template, {"openapi_url": self.get_openapi_url(api, kwargs)})
