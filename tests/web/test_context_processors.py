"""The header: admin pages under one Admin menu, with what waits for an admin counted
(dead letters not replayed, evaluation errors), readable without JavaScript."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from supervisor.core import clock
from supervisor.core.models import DeadLetter, SweepFailure
from tests.support.cast import ADMIN, OPERATOR, VIEWER, login_as
from tests.support.stories import failures

pytestmark = pytest.mark.django_db


def dead_letters(waiting: int, replayed: int = 0) -> None:
    now = clock.now()
    DeadLetter.objects.bulk_create(
        [DeadLetter(body="{}", error="bad") for _ in range(waiting)]
        + [DeadLetter(body="{}", error="bad", replayed_at=now) for _ in range(replayed)]
    )


def header(html: str) -> str:
    return html[html.index('<header class="top">') : html.index("</header>")]


def text_of(html: str) -> str:
    """What a screen reader reads: the tags gone, the spaces folded."""
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def test_an_admin_sees_the_dead_letters_and_evaluation_errors_counted(client):
    dead_letters(waiting=3, replayed=2)
    failures(1)
    login_as(client, ADMIN)

    nav = header(client.get("/").content.decode())

    read = text_of(nav)
    assert "Dead letters (3 dead letters not replayed)" in read
    assert "Failures (1 evaluation error)" in read
    assert "Admin (4 waiting: 3 dead letters, 1 evaluation error)" in read


def test_nothing_waiting_shows_no_count(client):
    dead_letters(waiting=0, replayed=2)
    login_as(client, ADMIN)
    assert 'class="count"' not in header(client.get("/").content.decode())


def test_the_admin_pages_are_under_one_menu_for_admins(client):
    login_as(client, ADMIN)
    nav = header(client.get("/admin/failures/").content.decode())
    menu = nav[nav.index('<details class="admin-menu"') : nav.index("</details>")]
    for path in ("/admin/sources/", "/admin/users/", "/admin/dead-letters/", "/admin/failures/"):
        assert f'href="{path}"' in menu
    for path in ("/admin/channels/", "/admin/routes/", "/admin/notifications/"):
        assert f'href="{path}"' in menu
    # The page shown is marked current, and so is the menu holding it.
    assert '<summary class="current">' in menu
    assert 'href="/admin/failures/" aria-current="page"' in menu


@pytest.mark.parametrize("role", [OPERATOR, VIEWER])
def test_others_get_no_admin_menu_and_no_counts(client, role):
    dead_letters(waiting=3)
    failures(2)
    login_as(client, role)
    nav = header(client.get("/").content.decode())
    assert "admin-menu" not in nav and "dead letter" not in nav


def overview_queries(client, n: int) -> int:
    DeadLetter.objects.all().delete()
    SweepFailure.objects.all().delete()
    dead_letters(waiting=n)
    failures(n)
    with CaptureQueriesContext(connection) as captured:
        assert client.get("/").status_code == 200
    return len(captured)


def test_the_counts_cost_one_query_each_whatever_the_numbers(client):
    login_as(client, OPERATOR)
    operator_queries = overview_queries(client, 2)
    client.logout()
    login_as(client, ADMIN)
    assert overview_queries(client, 2) == overview_queries(client, 40)
    # An admin's page runs the two counts beside what an operator's runs (and the
    # admin's group lookup for the role).
    assert overview_queries(client, 2) <= operator_queries + 2


def test_admin_on_its_own_leads_to_the_admin_pages(client):
    """/admin/ was a 404, though every admin page lives under it."""
    login_as(client, ADMIN)
    response = client.get("/admin/")
    assert response.status_code == 302 and response["Location"] == "/admin/sources/"
    assert client.get(response["Location"]).status_code == 200
    login_as(client, VIEWER)
    assert client.get("/admin/").status_code == 403
