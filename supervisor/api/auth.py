"""Who is calling the API: a bearer token with the scopes an operation needs, or a
person's session (scopes.py says which, per operation).

A token reads and acts only in its source's namespace: everything of another namespace
is, for it, not there (404). A session (a person) sees every namespace.
"""

from django.http import HttpRequest
from ninja.errors import HttpError
from ninja.security import HttpBearer, SessionAuth

from supervisor.core.access.sources import source_for_token


class TokenAuth(HttpBearer):
    """A source's bearer token; a live token without one of `scopes` is 403, not 401."""

    def __init__(self, scopes: tuple[str, ...]):
        super().__init__()
        self.scopes = scopes

    def authenticate(self, request: HttpRequest, token: str):
        source = source_for_token(token)
        if source is None:
            return None
        missing = [s for s in self.scopes if s not in source.scope_set]
        if missing:
            needed = " and ".join(repr(s) for s in self.scopes)
            raise HttpError(
                403,
                f"this token lacks the {' and '.join(repr(s) for s in missing)} scope"
                + (f" (this operation needs {needed})" if len(self.scopes) > 1 else ""),
            )
        request.source = source
        return source


class BrowserSession(SessionAuth):
    """A logged-in browser session, with `permission` when given; its unsafe requests
    need the CSRF token. A request without the session cookie is not a browser's: no
    CSRF check, so a bearer token tried after it gets its own answer (401/403) instead
    of "CSRF check failed"."""

    def __init__(self, permission: str | None = None):
        super().__init__()
        self.permission = permission

    def _get_key(self, request: HttpRequest):
        if self.param_name not in request.COOKIES:
            return None
        return super()._get_key(request)

    def authenticate(self, request: HttpRequest, key):
        user = super().authenticate(request, key)
        if user is not None and self.permission and not user.has_perm(self.permission):
            raise HttpError(403, "your account may look but not act (ask for the operator role)")
        return user


def actor_of(request: HttpRequest):
    """(user or None, "user:NAME" | "source:NAME"): who asks for an action."""
    source = getattr(request, "source", None)
    if source is not None:
        return None, f"source:{source.name}"
    user = request.user
    return user, f"user:{user.get_username()}"


WITHHELD = (
    "this token has the 'act' scope but not 'read': what agents wrote (texts, task ids "
    "of a bulk preview, evidence) is left out"
)


def may_read(request: HttpRequest) -> bool:
    """Whether the caller may be shown what agents wrote: a person's session, or a token
    with the `read` scope (an `act` token without it acts, and is shown no text)."""
    source = getattr(request, "source", None)
    return source is None or "read" in source.scope_set


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
