"""Every URL pattern of the root URL configuration, and what each caller gets from it.

`patterns()` walks `get_resolver()` recursively (the ninja API's generated patterns
included). `MATRIX` has one row per (url, method): the status each caller gets. The
walk test fails when a pattern has no GET and no POST row, so a new URL cannot be added
without deciding who may use it.

Callers: the page cast (stranger, viewer, operator, admin, each by session) and four
bearer tokens: one with every scope (TOKEN), one with every scope but those the row's
operation needs (UNSCOPED; the scopes come from `supervisor.api.scopes.NEEDS`), a
revoked one (REVOKED), and one with every scope of another namespace (ELSEWHERE), for
which the walk's objects are not there. Pages ignore bearer tokens: a row without
token answers gets the stranger's answer for all four.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field

from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from supervisor.api.scopes import NEEDS
from supervisor.core.access.sources import do_create_source, do_revoke_source
from tests.support.cast import ADMIN, ANONYMOUS, CAST, OPERATOR, VIEWER, login_as

TOKEN, UNSCOPED, REVOKED = "token", "token-without-scope", "revoked-token"
ELSEWHERE = "token-of-another-namespace"
TOKENS = (TOKEN, UNSCOPED, REVOKED, ELSEWHERE)
CALLERS = (*CAST, *TOKENS)
OTHER_NAMESPACE = "walk-elsewhere"
LOGIN = "login"  # a redirect to the log-in page
ALL_SCOPES = "ingest,read,act,metrics"


def patterns(resolvers=None, prefix: str = "") -> list[str]:
    """Every route of the URL configuration, as "/route/" strings with their converters."""
    routes = []
    for entry in resolvers if resolvers is not None else get_resolver().url_patterns:
        if isinstance(entry, URLResolver):
            routes += patterns(entry.url_patterns, prefix + str(entry.pattern))
        else:
            assert isinstance(entry, URLPattern)
            routes.append("/" + prefix + str(entry.pattern))
    return routes


def public_route(url: str) -> str:
    """A concrete URL's operation as NEEDS names it ("/api/v1/flags/{flag_id}")."""
    return re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route_of(url))


def route_of(url: str) -> str:
    """The pattern a concrete URL resolves to ("/tasks/<int:pk>/" for "/tasks/3/")."""
    from django.urls import resolve

    return "/" + resolve(url.split("?")[0]).route


@dataclass
class Row:
    url: str  # with {placeholders} filled from the `walk_objects` fixture
    method: str
    answers: dict[str, int | str]
    data: dict = field(default_factory=dict)  # query (GET) or body (POST; JSON to /api/)
    # Answers about every namespace (/metrics): a token of another one sees the walk's.
    every_namespace: bool = False

    @property
    def id(self) -> str:
        return f"{self.method} {self.url}"

    def scopes(self, objects: dict) -> tuple[str, ...]:
        """The token scopes the row's operation needs, as NEEDS says (none for a page)."""
        need = NEEDS.get((self.method, public_route(self.url.format(**objects))))
        return need.scopes if need else ()

    def expected(self, caller: str) -> int | str:
        if caller in self.answers:
            return self.answers[caller]
        assert caller in TOKENS, f"{self.id}: no answer for {caller}"
        return self.answers[ANONYMOUS]


ADMIN_ONLY = {ANONYMOUS: LOGIN, VIEWER: 403, OPERATOR: 403}
ACTORS = {ANONYMOUS: LOGIN, VIEWER: 403}
READERS = {ANONYMOUS: LOGIN}


def everyone(status) -> dict:
    return dict.fromkeys(CALLERS, status)


def api(
    ok: int,
    *,
    viewer: int | None = None,
    session: bool = True,
    elsewhere: int | None = None,
) -> dict:
    """An API row's answers: no token 401, a token without the scopes it needs 403, a
    revoked one 401, a token of another namespace `elsewhere` (404 for one of the walk's
    objects); a session reads (or acts, when `viewer` says the viewer's refusal)."""
    answers = {ANONYMOUS: 401, TOKEN: ok, UNSCOPED: 403, REVOKED: 401, ELSEWHERE: elsewhere or ok}
    if session:
        answers |= {VIEWER: viewer or ok, OPERATOR: ok, ADMIN: ok}
    else:  # a bearer token only: a browser session is no credential here
        answers |= {VIEWER: 401, OPERATOR: 401, ADMIN: 401}
    return answers


MATRIX = [
    # logging in and out
    Row("/login/", "GET", everyone(200)),
    Row("/login/", "POST", everyone(200)),  # the form again, with "wrong name or password"
    # the tab's icon draws the count in its URL: no session, nothing of anyone's
    Row("/favicon.svg", "GET", everyone(200)),
    Row("/favicon.svg", "POST", everyone(405)),
    Row("/favicon.ico", "GET", everyone(301)),
    Row("/favicon.ico", "POST", everyone(405)),
    Row("/logout/", "GET", everyone(405)),
    Row("/logout/", "POST", everyone(302)),
    # the pages: every logged-in user reads them
    Row("/", "GET", {**READERS, VIEWER: 200, OPERATOR: 200, ADMIN: 200}),
    Row("/", "POST", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    Row("/tasks/", "GET", {**READERS, VIEWER: 200, OPERATOR: 200, ADMIN: 200}),
    Row("/tasks/", "POST", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    Row("/tasks/{task}/", "GET", {**READERS, VIEWER: 200, OPERATOR: 200, ADMIN: 200}),
    Row("/tasks/{task}/", "POST", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    Row("/tasks/t0/", "GET", {**READERS, VIEWER: 302, OPERATOR: 302, ADMIN: 302}),
    Row("/tasks/t0/", "POST", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    Row("/threads/{thread}/", "GET", {**READERS, VIEWER: 200, OPERATOR: 200, ADMIN: 200}),
    Row("/threads/{thread}/", "POST", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    # admin: sources and tokens
    Row("/admin/", "GET", {**ADMIN_ONLY, ADMIN: 302}),
    Row("/admin/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/sources/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/sources/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/sources/new/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/sources/new/", "POST", {**ADMIN_ONLY, ADMIN: 200}),  # the form, with errors
    Row("/admin/sources/{source}/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/sources/{source}/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/sources/{source}/connector/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/sources/{source}/connector/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    Row("/admin/sources/{source}/test/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/sources/{source}/test/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    Row("/admin/sources/{source}/revoke/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/sources/{source}/revoke/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    Row("/admin/sources/{source}/rotate/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/sources/{source}/rotate/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    # admin: users and roles
    Row("/admin/users/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/users/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/users/new/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/users/new/", "POST", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/users/{user}/role/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/users/{user}/role/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    # admin: dead letters
    Row("/admin/dead-letters/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/dead-letters/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/dead-letters/{dead}/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/dead-letters/{dead}/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/dead-letters/{dead}/replay/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/dead-letters/{dead}/replay/", "POST", {**ADMIN_ONLY, ADMIN: 200}),
    # admin: what the sweeps could not do
    Row("/admin/failures/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/failures/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    # admin: alert channels, routes and the notification outbox
    Row("/admin/channels/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/channels/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/channels/new/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/channels/new/", "POST", {**ADMIN_ONLY, ADMIN: 200}),  # the form, with errors
    Row("/admin/channels/{channel}/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/channels/{channel}/", "POST", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/channels/{channel}/enabled/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/channels/{channel}/enabled/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    Row("/admin/channels/{channel}/test/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/channels/{channel}/test/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    Row("/admin/routes/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/routes/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/routes/new/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/routes/new/", "POST", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/routes/{route}/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/routes/{route}/", "POST", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/notifications/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    Row("/admin/notifications/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/notifications/{note}/retry/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    Row("/admin/notifications/{note}/retry/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    # the audit: everyone logged in reads it
    Row("/audit/", "GET", {**READERS, VIEWER: 200, OPERATOR: 200, ADMIN: 200}),
    Row("/audit/", "POST", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    # silences: everyone logged in reads them, operators create, edit and end them
    Row("/silences/", "GET", {**READERS, VIEWER: 200, OPERATOR: 200, ADMIN: 200}),
    Row("/silences/", "POST", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    Row("/silences/new/", "GET", {**ACTORS, OPERATOR: 200, ADMIN: 200}),
    Row(
        "/silences/new/",
        "POST",
        {**ACTORS, OPERATOR: 302, ADMIN: 302},
        {"kinds": "stuck", "reason": "walk", "for": "1h"},
    ),
    Row("/silences/{silence}/", "GET", {**READERS, VIEWER: 200, OPERATOR: 200, ADMIN: 200}),
    Row(
        "/silences/{silence}/",
        "POST",
        {**ACTORS, OPERATOR: 302, ADMIN: 302},
        {"kinds": "stuck", "reason": "walk, edited", "for": "1h"},
    ),
    Row("/silences/{silence}/end/", "GET", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    Row("/silences/{silence}/end/", "POST", {**ACTORS, OPERATOR: 302, ADMIN: 302}),
    Row("/data-as-of/", "GET", {**READERS, VIEWER: 200, OPERATOR: 200, ADMIN: 200}),
    Row("/data-as-of/", "POST", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    # Prometheus figures: a bearer token with the metrics scope only, never a session
    Row(
        "/metrics",
        "GET",
        api(200, session=False),
        every_namespace=True,
    ),
    Row("/metrics", "POST", everyone(405)),
    # the signed link of an alert message stands in for a login: anyone holding it
    Row("/alerts/ack/{link}/", "GET", everyone(200)),
    Row("/alerts/ack/{link}/", "POST", everyone(200), {"action": "acknowledge"}),
    Row("/alerts/ack/{bad_link}/", "GET", everyone(403)),
    Row("/alerts/ack/{bad_link}/", "POST", everyone(403), {"action": "acknowledge"}),
    Row("/alerts/ack/{gone_link}/", "GET", everyone(404)),
    # acting on a flag: the page's form and the API
    Row("/flags/{flag}/events/", "GET", {**READERS, VIEWER: 200, OPERATOR: 200, ADMIN: 200}),
    Row("/flags/{flag}/events/", "POST", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    # the zone times are shown in: a choice of one's own browser, stored in a cookie
    Row("/times/", "GET", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    Row("/times/", "POST", {**READERS, VIEWER: 302, OPERATOR: 302, ADMIN: 302}, {"times": "local"}),
    Row("/flags/{flag}/", "GET", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    Row(
        "/flags/{flag}/",
        "POST",
        {**READERS, VIEWER: 403, OPERATOR: 302, ADMIN: 302},
        {"action": "acknowledge"},
    ),
    # who looks after a task's problem: operators assign
    Row("/tasks/{task}/assignee/", "GET", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    Row(
        "/tasks/{task}/assignee/",
        "POST",
        {**READERS, VIEWER: 403, OPERATOR: 302, ADMIN: 302},
        {"action": "assign", "assignee": "me"},
    ),
    # saved views of the task list: anyone logged in saves; only the owner (ann) changes
    Row("/views/", "GET", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    Row(
        "/views/",
        "POST",
        {**READERS, VIEWER: 302, OPERATOR: 302, ADMIN: 302},
        {"name": "walk", "query": "state=open"},
    ),
    Row("/views/{view}/", "GET", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    Row(
        "/views/{view}/",
        "POST",
        {**READERS, VIEWER: 403, OPERATOR: 403, ADMIN: 403},
        {"action": "edit", "name": "renamed", "shared": "on"},
    ),
    # acting on a task's problem (its open flags shown on the page)
    Row("/tasks/{task}/problem/", "GET", {**READERS, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    Row(
        "/tasks/{task}/problem/",
        "POST",
        {**READERS, VIEWER: 403, OPERATOR: 302, ADMIN: 302},
        {"action": "acknowledge", "flag": "{flag}"},
    ),
    # acting on a task: the preview and confirm page, and bulk from the list
    Row("/tasks/{task}/actions/cancel/", "GET", {**ACTORS, OPERATOR: 200, ADMIN: 200}),
    Row(
        "/tasks/{task}/actions/cancel/",
        "POST",
        {**ACTORS, OPERATOR: 302, ADMIN: 302},
        {"reason": "matrix", "preview": "{cancel_preview}"},
    ),
    Row(
        "/tasks/bulk/",
        "GET",
        {**ACTORS, OPERATOR: 200, ADMIN: 200},
        {"kind": "cancel", "scope": "matching", "q": "t0"},
    ),
    Row(
        "/tasks/bulk/",
        "POST",
        {**ACTORS, OPERATOR: 302, ADMIN: 302},
        {"kind": "cancel", "scope": "matching", "q": "t0", "selection": "{selection}"},
    ),
    # the API (contract §6): its OpenAPI document is public, it describes the contract
    Row("/api/v1/openapi.json", "GET", everyone(200)),
    Row("/api/v1/openapi.json", "POST", everyone(405)),
    # its browsable page is for readers: a stranger's browser is sent to log in
    Row("/api/v1/docs", "GET", {**api(200), ANONYMOUS: LOGIN}),
    Row("/api/v1/docs", "POST", everyone(405)),
    Row("/api/v1/", "GET", everyone(404)),  # ninja's root: only there to name the prefix
    Row("/api/v1/", "POST", everyone(404)),
    Row("/api/v1/no/such/path", "GET", everyone(404)),  # a JSON 404, whoever asks
    Row("/api/v1/no/such/path", "POST", everyone(404)),
    Row("/api/v1/events", "GET", everyone(405)),
    Row(
        "/api/v1/events",
        "POST",
        api(200, session=False),
        {"events": []},
    ),
    Row("/api/v1/tasks", "GET", api(200)),
    Row("/api/v1/tasks", "POST", everyone(405)),
    Row("/api/v1/tasks/task%3At0", "GET", api(200, elsewhere=404)),
    Row("/api/v1/tasks/task%3At0", "POST", everyone(405)),
    Row("/api/v1/flags", "GET", api(200)),
    Row("/api/v1/flags", "POST", everyone(405)),
    Row("/api/v1/flags/{flag}", "GET", everyone(405)),
    Row("/api/v1/silences", "GET", api(200)),
    Row("/api/v1/silences", "POST", everyone(405)),
    Row(
        "/api/v1/flags/{flag}",
        "POST",
        api(200, viewer=403, elsewhere=404),
        {"action": "acknowledge"},
    ),
    Row("/api/v1/tasks/task%3At0/actions", "GET", everyone(405)),
    Row(
        "/api/v1/tasks/task%3At0/actions/preview",
        "GET",
        api(200, viewer=403, elsewhere=404),
        {"kind": "continue"},
    ),
    Row("/api/v1/tasks/task%3At0/actions/preview", "POST", everyone(405)),
    Row(
        "/api/v1/tasks/task%3At0/actions",
        "POST",
        api(202, viewer=403, elsewhere=404),
        {"kind": "continue"},
    ),
    Row("/api/v1/actions/bulk", "GET", everyone(405)),
    Row(
        "/api/v1/actions/bulk",
        "POST",
        api(200, viewer=403),
        {"kind": "continue", "filter": {"q": "t0"}},
    ),
]

# Who may see a 200 without logging in: the log-in page, the signed alert link (its
# signature is the credential) and the OpenAPI document (the public contract, no data).
# Static files are served by WhiteNoise before any URL pattern.
PUBLIC = {"/login/", "/alerts/ack/<str:token>/", "/api/v1/openapi.json", "/favicon.svg"}


def stranger() -> Client:
    """A client from an address of its own: failed log-ins are limited per address."""
    return Client(REMOTE_ADDR=f"10.{secrets.randbelow(256)}.{secrets.randbelow(256)}.1")


def token_for(caller: str, row: Row, objects: dict) -> str | None:
    """The bearer token `caller` sends on `row` (None for the session cast)."""
    if caller not in TOKENS:
        return None
    namespace = objects["namespace"]
    scopes = ALL_SCOPES
    if caller == UNSCOPED:
        needed = row.scopes(objects) or ("read",)
        scopes = ",".join(s for s in ALL_SCOPES.split(",") if s not in needed)
    if caller == ELSEWHERE:
        namespace = OTHER_NAMESPACE
    source, token = do_create_source(f"walk-{caller}", namespace=namespace, scopes=scopes)
    if caller == REVOKED:
        do_revoke_source(source)
    return token


def login(client, caller: str, row: Row, objects: dict) -> None:
    """Make `client` the caller: a logged-in role, or a stranger holding a bearer token."""
    token = token_for(caller, row, objects)
    if token is None:
        login_as(client, caller)
    else:
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {token}"


def send(client, row: Row, objects: dict):
    url = row.url.format(**objects)
    # A value like "{selection}" is filled in from the objects, as the URL is.
    data = {k: v.format(**objects) if isinstance(v, str) else v for k, v in row.data.items()}
    row = Row(row.url, row.method, row.answers, data, row.every_namespace)
    if row.method == "GET":
        return client.get(url, row.data)
    if url.startswith("/api/"):
        return client.post(url, json.dumps(row.data), content_type="application/json")
    return client.post(url, row.data)


def answered(response, expected) -> bool:
    if expected == LOGIN:
        return response.status_code == 302 and response.url.startswith("/login/?next=")
    return response.status_code == expected


def leaked(response, row: Row, caller: str, objects: dict) -> list[str]:
    """What of the walk's namespace a token of another namespace was shown."""
    if caller != ELSEWHERE or row.every_namespace or not row.url.startswith("/api/v1/"):
        return []
    if response.status_code >= 300:  # a refusal may repeat the id that was asked for
        return []
    body = response.content.decode()
    return [name for name in (objects["namespace"], objects["task_id"]) if name in body]
