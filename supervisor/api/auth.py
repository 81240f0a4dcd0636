"""Who may call the API: a bearer token with the right scope, or an operator's session.

A token reads and acts only in its source's namespace: everything of another namespace
is, for it, not there (404). A session (a person) sees every namespace.
"""

from django.http import HttpRequest
from ninja.errors import HttpError
from ninja.security import HttpBearer, SessionAuth

from supervisor.core.sources import source_for_token


class TokenAuth(HttpBearer):
    """A source's bearer token; a live token without `scope` is 403, not 401."""

    def __init__(self, scope: str):
        super().__init__()
        self.scope = scope

    def authenticate(self, request: HttpRequest, token: str):
        source = source_for_token(token)
        if source is None:
            return None
        if self.scope not in source.scope_set:
            raise HttpError(403, f"this token lacks the {self.scope!r} scope")
        request.source = source
        return source


class BrowserSession(SessionAuth):
    """A logged-in browser session; its unsafe requests need the CSRF token. A request
    without the session cookie is not a browser's: no CSRF check, so a bearer token
    tried after it gets its own answer (401/403) instead of "CSRF check failed"."""

    def _get_key(self, request: HttpRequest):
        if self.param_name not in request.COOKIES:
            return None
        return super()._get_key(request)


def readers():
    return [TokenAuth("read"), BrowserSession()]


def actors():
    return [TokenAuth("act"), BrowserSession()]


def actor_of(request: HttpRequest, permission: str):
    """(user or None, "user:NAME" | "source:NAME") for an acting request; a logged-in
    user without `permission` is refused with 403."""
    source = getattr(request, "source", None)
    if source is not None:
        return None, f"source:{source.name}"
    user = request.user
    if not user.has_perm(permission):
        raise HttpError(403, "your account may look but not act (ask for the operator role)")
    return user, f"user:{user.get_username()}"


def namespace_of(request: HttpRequest, namespace: str | None = None) -> str | None:
    """The namespace a request may see: a token's own (asking for another is a 404), or
    for a session the one asked for (None: all)."""
    source = getattr(request, "source", None)
    if source is None:
        return namespace
    own = source.namespace.name
    if namespace and namespace != own:
        raise HttpError(404, f"this token reads and acts only in namespace {own!r}")
    return own
