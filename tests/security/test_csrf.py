"""CSRF on every form: each POST row of the walk, and each form found on a page."""

from html.parser import HTMLParser
from urllib.parse import urlencode, urljoin

import pytest
from django.db import transaction
from django.test import Client

from tests.support.cast import ADMIN, login_as
from tests.support.walk import MATRIX, route_of, send

pytestmark = pytest.mark.django_db

FORM_POSTS = [row for row in MATRIX if row.method == "POST" and not row.url.startswith("/api/")]
PAGES = [row for row in MATRIX if row.method == "GET" and row.expected(ADMIN) == 200]


class Forms(HTMLParser):
    """The POST forms of a page: their action and the values they would send."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []
        self._form = None
        self._select = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            post = (attrs.get("method") or "get").lower() == "post"
            self._form = {"action": attrs.get("action") or "", "data": {}} if post else None
            if post:
                self.forms.append(self._form)
        elif self._form is None or not attrs.get("name"):
            return
        elif tag == "input" and attrs.get("type") not in ("checkbox", "radio", "submit"):
            self._form["data"][attrs["name"]] = attrs.get("value") or ""
        elif tag == "input" and "checked" in attrs:
            self._form["data"][attrs["name"]] = attrs.get("value") or "on"
        elif tag == "select":
            self._select = attrs["name"]
        elif tag == "option" and self._select and self._select not in self._form["data"]:
            self._form["data"][self._select] = attrs.get("value") or ""

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None


def forms_of(page_url: str, html: str) -> list[dict]:
    parser = Forms()
    parser.feed(html)
    for form in parser.forms:
        form["action"] = urljoin(page_url, form["action"] or page_url)
    return parser.forms


def _page_url(row, objects) -> str:
    url = row.url.format(**objects)
    return f"{url}?{urlencode(row.data)}" if row.data else url


@pytest.mark.parametrize("row", FORM_POSTS, ids=lambda row: row.id)
def test_a_form_post_without_the_csrf_token_is_refused(walk_objects, row):
    client = Client(enforce_csrf_checks=True)
    login_as(client, ADMIN)
    assert send(client, row, walk_objects).status_code == 403


def test_every_form_on_every_page_needs_the_csrf_token(walk_objects):
    checked, uncovered = set(), set()
    posted = {route_of(row.url.format(**walk_objects)) for row in FORM_POSTS}
    admin = Client(enforce_csrf_checks=True)
    user = login_as(admin, ADMIN)
    pages = [("/login/", Client(enforce_csrf_checks=True))]
    pages += [(_page_url(row, walk_objects), admin) for row in PAGES]
    for url, client in pages:
        response = client.get(url)
        if "text/html" not in response["Content-Type"]:
            continue
        for form in forms_of(url, response.content.decode()):
            route = route_of(form["action"])
            if route not in posted:
                uncovered.add((url, form["action"]))
            data = dict(form["data"])
            token = data.pop("csrfmiddlewaretoken", None)
            assert token, f"{url}: the form to {form['action']} has no CSRF token"
            with transaction.atomic():
                refused = client.post(form["action"], data)
                assert refused.status_code == 403, (url, form["action"])
                data["csrfmiddlewaretoken"] = token
                accepted = client.post(form["action"], data)
                assert accepted.status_code != 403, (url, form["action"])
                assert accepted.status_code < 500
                transaction.set_rollback(True)
            if client is admin:
                client.force_login(user)  # the log-out form ended the session
            checked.add(route)
    assert not uncovered, f"forms posting to URLs without a POST row in walk.MATRIX: {uncovered}"
    # Every URL of the walk that takes a POST was found in a form on some page.
    takes_posts = {
        route_of(row.url.format(**walk_objects))
        for row in FORM_POSTS
        if row.expected(ADMIN) not in (403, 404, 405)
    }
    assert checked >= takes_posts, sorted(takes_posts - checked)
    assert len(checked) >= 20
