"""Who may call each API operation: the token scopes it needs and who may come by
session instead. The one table; docs/security.md shows it (a test checks that the two
agree), `ScopedRouter` gives every operation its row's guard, and an operation without
a row fails at import.

`act` alone acts, as the contract's §6 says; what agents wrote (the text a preview or
an action carries, a bulk preview's tasks, a flag's evidence) is shown only to a
caller that may also read (auth.may_read), and left out, saying so, for one that may
not.
"""

import re
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured
from ninja import Router
from ninja.constants import NOT_SET

from .auth import BrowserSession, TokenAuth

ACT_PERMISSION = "core.act"

# Who may come by session (a person logged in) instead of a token.
NO_SESSION = "no"
ANYONE = "anyone logged in"
OPERATOR = "an operator"
EVERYONE = "anyone, logged in or not"  # public: no credential at all


@dataclass(frozen=True)
class Need:
    scopes: tuple[str, ...]  # a token needs every one; none: public
    session: str  # NO_SESSION, ANYONE, OPERATOR or EVERYONE

    def guards(self) -> list | None:
        """The operation's `auth`: a token with the scopes, else a session if allowed."""
        if not self.scopes:
            return None
        if self.session == NO_SESSION:
            return [TokenAuth(self.scopes)]
        permission = ACT_PERMISSION if self.session == OPERATOR else None
        return [TokenAuth(self.scopes), BrowserSession(permission)]


NEEDS: dict[tuple[str, str], Need] = {
    ("POST", "/api/v1/events"): Need(("ingest",), NO_SESSION),
    ("GET", "/api/v1/tasks"): Need(("read",), ANYONE),
    ("GET", "/api/v1/tasks/{task_id}"): Need(("read",), ANYONE),
    ("GET", "/api/v1/flags"): Need(("read",), ANYONE),
    ("POST", "/api/v1/flags/{flag_id}"): Need(("act",), OPERATOR),
    ("GET", "/api/v1/silences"): Need(("read",), ANYONE),
    ("GET", "/api/v1/tasks/{task_id}/actions/preview"): Need(("act",), OPERATOR),
    ("POST", "/api/v1/tasks/{task_id}/actions"): Need(("act",), OPERATOR),
    ("POST", "/api/v1/actions/bulk"): Need(("act",), OPERATOR),
    # Not operations of the routers: ninja's own pages, and the Prometheus scrape.
    ("GET", "/api/v1/openapi.json"): Need((), EVERYONE),  # the contract's schema: no data
    ("GET", "/api/v1/docs"): Need(("read",), ANYONE),  # docs.py
    ("GET", "/metrics"): Need(("metrics",), NO_SESSION),  # metrics.py
}

PREFIX = "/api/v1"


def public_path(router_path: str) -> str:
    """A router path as callers see it: "/tasks/{anytext:task_id}" is "/api/v1/tasks/{task_id}"."""
    return PREFIX + re.sub(r"\{\w+:(\w+)\}", r"{\1}", router_path)


def need_of(method: str, path: str) -> Need:
    try:
        return NEEDS[(method, path)]
    except KeyError:
        raise ImproperlyConfigured(
            f"{method} {path} has no row in supervisor/api/scopes.py NEEDS: decide who "
            "may call it (and add it to docs/security.md)"
        ) from None


class ScopedRouter(Router):
    """A router whose operations are guarded by their row of NEEDS, never by an `auth`
    of their own. Mounted at the API's root."""

    def add_api_operation(self, path, methods, view_func, *, auth=NOT_SET, **kwargs):
        if auth is not NOT_SET:
            raise ImproperlyConfigured(f"{path}: its guard comes from NEEDS, not `auth=`")
        if len(methods) != 1:
            raise ImproperlyConfigured(f"{path}: one method per operation, one row each")
        guards = need_of(methods[0], public_path(path)).guards()
        super().add_api_operation(path, methods, view_func, auth=guards, **kwargs)
