"""The URL walk: every pattern of the URL configuration, every caller, every method."""

import json

import pytest
from django.db import transaction
from django.test import Client
from django.urls import resolve

from tests.support.cast import login_as
from tests.support.walk import (
    ADMIN,
    ANONYMOUS,
    CALLERS,
    LOGIN,
    MATRIX,
    PUBLIC,
    answered,
    leaked,
    login,
    patterns,
    route_of,
    send,
    stranger,
)

pytestmark = pytest.mark.django_db


def _rows_by_route(objects) -> dict[str, set[str]]:
    covered: dict[str, set[str]] = {}
    for row in MATRIX:
        covered.setdefault(route_of(row.url.format(**objects)), set()).add(row.method)
    return covered


def test_every_url_pattern_has_a_get_and_a_post_row(walk_objects):
    covered = _rows_by_route(walk_objects)
    routes = patterns()
    missing = [r for r in routes if covered.get(r, set()) < {"GET", "POST"}]
    assert not missing, f"URL patterns without a GET and a POST row in walk.MATRIX: {missing}"
    stale = sorted(set(covered) - set(routes))
    assert not stale, f"rows for URLs no pattern has: {stale}"
    # The walk reached into the included and the generated (ninja) patterns.
    assert {"/alerts/ack/<str:token>/", "/api/v1/events", "/admin/users/<int:pk>/role/"} <= set(
        routes
    )


@pytest.mark.parametrize("row", MATRIX, ids=lambda row: row.id)
def test_the_permission_matrix(walk_objects, row):
    # One test per row, each caller in a savepoint rolled back after it: every caller
    # meets the same objects, and the fixture is built once instead of seven times.
    wrong = {}
    for caller in CALLERS:
        with transaction.atomic():
            client = stranger()
            login(client, caller, row, walk_objects)
            response = send(client, row, walk_objects)
            expected = row.expected(caller)
            if not answered(response, expected):
                wrong[caller] = (response.status_code, expected)
            elif shown := leaked(response, row, caller, walk_objects):
                wrong[caller] = f"shown what is another namespace's: {shown}"
            transaction.set_rollback(True)
    assert not wrong, f"(got, expected) by caller: {wrong}"


def test_a_stranger_gets_200_only_from_the_public_urls(walk_objects):
    for row in MATRIX:
        if row.expected(ANONYMOUS) == 200:
            assert route_of(row.url.format(**walk_objects)) in PUBLIC, row.id
    pages = [row for row in MATRIX if row.expected(ANONYMOUS) == LOGIN]
    assert len(pages) > 30


def test_a_stranger_gets_static_files():
    response = Client().get("/static/css/supervisor.css")
    assert response.status_code == 200
    assert b"".join(response.streaming_content)


@pytest.mark.parametrize(
    "token",
    ["", "x", "not.a.signature", "a" * 400, "%00", "eyJmbGFnIjoxfQ:1vQ:sig", "..%2F..%2Fetc"],
)
def test_a_bad_alert_link_is_refused_with_a_4xx(walk_objects, token):
    client = Client(raise_request_exception=False)
    for method in (client.get, client.post):
        response = method(f"/alerts/ack/{token}/")
        assert 400 <= response.status_code < 500, (token, response.status_code)


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("row", [r for r in MATRIX if r.method == "GET"], ids=lambda row: row.url)
def test_no_url_answers_other_methods(walk_objects, row, method):
    # Every view says which methods it takes; the rest are 405 (a JSON 404 for unknown
    # API paths), never the GET's page nor a change.
    client = stranger()
    login(client, ADMIN, row, walk_objects)
    response = client.generic(method, row.url.format(**walk_objects))
    unknown_api_path = row.url.startswith("/api/v1/") and row.expected(ADMIN) == 404
    assert response.status_code == (404 if unknown_api_path else 405)


@pytest.mark.parametrize("row", [r for r in MATRIX if r.method == "GET"], ids=lambda row: row.url)
def test_other_methods_from_a_browser_meet_the_csrf_check_first(walk_objects, row):
    # As a browser sends them (the test client skips CSRF unless told): a page refuses
    # PUT, PATCH and DELETE with 403 without the CSRF token and 405 with it; the API,
    # whose views take no CSRF cookie, answers 405 (or its JSON 404) either way.
    client = Client(enforce_csrf_checks=True)
    login(client, ADMIN, row, walk_objects)
    url = row.url.format(**walk_objects)
    exempt = getattr(resolve(url.split("?")[0]).func, "csrf_exempt", False)
    unknown_api_path = url.startswith("/api/v1/") and row.expected(ADMIN) == 404
    refused = 404 if unknown_api_path else 405
    without = client.generic("DELETE", url).status_code
    client.get("/login/")  # a CSRF cookie, and its token for the header
    token = client.cookies["csrftoken"].value
    with_token = client.generic("DELETE", url, headers={"X-CSRFToken": token}).status_code
    assert (without, with_token) == (refused if exempt else 403, refused)


# --- every /api/ answer is JSON ----------------------------------------------------------

API_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
API_URLS = sorted({row.url for row in MATRIX if row.url.startswith("/api/")} | {"/api/", "/api/x"})


def _is_json_error(response) -> bool:
    if not response["Content-Type"].startswith("application/json"):
        return False
    return isinstance(json.loads(response.content).get("error"), str)


@pytest.mark.parametrize("url", API_URLS)
def test_every_api_refusal_is_json(walk_objects, url):
    # Every route with every method, from a stranger and from an admin's session: what
    # is not a success is `{"error": ...}`, a 405 with the Allow header.
    wrong = {}
    for caller in (ANONYMOUS, ADMIN):
        client = stranger()
        login_as(client, caller)
        for method in API_METHODS:
            response = client.generic(method, url.format(**walk_objects))
            status = response.status_code
            if status >= 400 and not _is_json_error(response):
                wrong[caller, method] = (status, response["Content-Type"])
            elif status == 405 and method in response.get("Allow", method):
                wrong[caller, method] = (status, f"Allow: {response.get('Allow')}")
    assert not wrong, wrong
