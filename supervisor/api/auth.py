"""Who may call the API: a bearer token with the right scope, or an operator's session."""

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


def readers():
    return [SessionAuth(), TokenAuth("read")]
