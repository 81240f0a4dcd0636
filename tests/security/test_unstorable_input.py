"""A NUL in a page's filter or form is a 400 naming it, as the API answers the same input,
never a 500 from the database (PostgreSQL refuses NUL in a query; SQLite takes it)."""

import re

import pytest
from django.test import Client

from tests.support.cast import ADMIN, login_as
from tests.support.walk import MATRIX, patterns

pytestmark = pytest.mark.django_db

# What each page reads from its query; a page reading none is tried with one it ignores.
READS = {
    "/": ["thread_flags"],
    "/tasks/": ["q", "flag", "state", "status", "env", "parent", "namespace", "cursor"],
    "/tasks/{task}/": ["timeline_before"],
    "/tasks/{task}/actions/cancel/": ["message", "run"],
    "/tasks/bulk/": ["kind", "scope", "q", "flag", "status", "env", "namespace", "selection"],
    "/audit/": ["kind", "actor", "cursor"],
    "/admin/dead-letters/": ["state", "cursor"],
    "/admin/notifications/": ["state"],
    "/favicon.svg": ["n"],
    "/login/": ["next"],
}
PAGES = [r for r in MATRIX if r.method == "GET" and not r.url.startswith(("/api/", "/metrics"))]
WALK = [(row, name) for row in PAGES for name in READS.get(row.url, ["x"])]


@pytest.mark.parametrize("row, name", WALK, ids=[f"{r.url}?{n}" for r, n in WALK])
def test_a_nul_in_a_page_parameter_is_a_400_naming_it(walk_objects, row, name):
    client = Client(raise_request_exception=False)
    login_as(client, ADMIN)
    data = {k: v.format(**walk_objects) for k, v in row.data.items()} | {name: "a\x00b"}
    response = client.get(row.url.format(**walk_objects), data)
    assert response.status_code == 400, response.status_code
    assert f"“{name}”" in response.content.decode()
    assert "U+0000 (NUL)" in response.content.decode()


def test_a_nul_in_a_form_is_a_400_naming_the_field(walk_objects):
    client = Client(raise_request_exception=False)
    login_as(client, ADMIN)
    form = {"kind": "cancel", "scope": "matching", "q": "t\x000", "selection": "x"}
    response = client.post("/tasks/bulk/", form)
    assert response.status_code == 400
    assert "“q”" in response.content.decode()


def test_to_htmx_the_400_is_the_sentence_alone(walk_objects):
    client = Client(raise_request_exception=False)
    login_as(client, ADMIN)
    response = client.get("/tasks/", {"q": "\x00"}, headers={"HX-Request": "true"})
    assert response.status_code == 400
    assert response["HX-Retarget"] == "#messages"
    assert "<html" not in response.content.decode()


# --- a NUL in the path -------------------------------------------------------------------
# `/tasks/%00/` reached the short-id lookup, whose query PostgreSQL refused (a
# 500); the other pages with an id in their path answered 404 or 405. Every page's path
# parameter, each method: a 400 naming the address.
PAGE_ROUTES = [r for r in patterns() if "<" in r and not r.startswith("/api/")]


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("route", PAGE_ROUTES)
def test_a_nul_in_a_pages_path_is_a_400_naming_the_address(walk_objects, route, method):
    client = Client(raise_request_exception=False)
    login_as(client, ADMIN)
    response = getattr(client, method)(re.sub(r"<[^>]+>", "a%00b", route))
    assert response.status_code == 400, response.status_code
    assert "The address" in response.content.decode()
    assert "U+0000 (NUL)" in response.content.decode()


@pytest.mark.parametrize("url", ["/tasks/%00/", "/tasks/t0%00/", "/tasks/t0/%00/", "/%00/"])
def test_the_task_short_id_page_refuses_a_nul_before_any_query(walk_objects, url):
    client = Client(raise_request_exception=False)
    login_as(client, ADMIN)
    response = client.get(url)
    assert response.status_code == 400, response.status_code
    assert "U+0000 (NUL)" in response.content.decode()


# The API's operations name their own path fields (supervisor/api/inputs.py).
API_PATHS = [
    ("get", "/api/v1/tasks/a%00b", {}, "task_id: contains U+0000"),
    ("get", "/api/v1/tasks/a%00b/actions/preview", {"kind": "cancel"}, "task_id: contains U+0000"),
    ("post", "/api/v1/tasks/a%00b/actions", {"kind": "cancel"}, "task_id: contains U+0000"),
    ("post", "/api/v1/flags/1%00", {"action": "acknowledge"}, "flag_id"),
]


@pytest.mark.parametrize(
    ("method", "url", "data", "words"), API_PATHS, ids=[u for _, u, _, _ in API_PATHS]
)
def test_a_nul_in_an_api_path_is_a_400_naming_the_field(
    walk_objects, source, method, url, data, words
):
    client = Client(raise_request_exception=False)
    auth = {"Authorization": f"Bearer {source.token}"}
    if method == "get":
        response = client.get(url, data, headers=auth)
    else:
        response = client.post(url, data, content_type="application/json", headers=auth)
    assert response.status_code == 400, response.content
    assert words in response.json()["error"]
