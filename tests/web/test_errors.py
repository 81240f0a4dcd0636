"""400, 403, 404, 413 and 500 pages with the site's navigation and a sentence of what happened;
to htmx, the sentence alone, retargeted to the messages area."""

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import get_resolver

from tests.support.cast import ADMIN, ANONYMOUS, OPERATOR, VIEWER, login_as

pytestmark = pytest.mark.django_db

NAV = '<nav aria-label="Main">'


@pytest.mark.parametrize("role", [VIEWER, OPERATOR, ADMIN])
def test_a_missing_page_has_the_navigation_and_says_what_happened(client, role):
    login_as(client, role)
    response = client.get("/threads/987654/")
    html = response.content.decode()
    assert response.status_code == 404
    assert NAV in html and 'href="/tasks/"' in html
    assert "There is nothing at <code>/threads/987654/</code>" in html


def test_a_stranger_on_a_missing_page_is_offered_the_log_in(client):
    login_as(client, ANONYMOUS)
    html = client.get("/no/such/page/").content.decode()
    assert "<h1" in html and 'href="/login/"' in html and "Not found" in html


@pytest.mark.parametrize("role", [VIEWER, OPERATOR])
def test_a_refused_page_says_why_with_the_navigation(client, role):
    login_as(client, role)
    response = client.get("/admin/sources/")
    html = response.content.decode()
    assert response.status_code == 403
    assert NAV in html and "may not do this: this page is for admins." in html


def test_htmx_gets_the_sentence_alone_in_the_messages_area(client):
    login_as(client, VIEWER)
    response = client.get("/tasks/987654/", headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 404
    assert response["HX-Retarget"] == "#messages" and "<html" not in html
    assert "There is nothing at <code>/tasks/987654/</code>" in html


def test_the_server_error_page_needs_no_query_and_has_the_navigation():
    handler = get_resolver().resolve_error_handler(500)
    request = RequestFactory().get("/tasks/")
    with CaptureQueriesContext(connection) as captured:
        response = handler(request)
    html = response.content.decode()
    assert response.status_code == 500 and captured.captured_queries == []
    assert NAV in html and 'href="/tasks/"' in html and "Server error" in html


def test_a_form_over_the_upload_limit_is_a_413_page(client):
    from django.conf import settings

    login_as(client, OPERATOR)
    big = "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    response = client.post("/tasks/bulk/", {"kind": "cancel", "q": big})
    html = response.content.decode()
    assert response.status_code == 413
    assert NAV in html and "more than Supervisor takes in one request" in html
