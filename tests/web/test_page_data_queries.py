"""List pages run the same number of queries for 2 tasks as for 40."""

import pytest

from tests.support.cast import ADMIN, login_as
from tests.support.page_queries import lead_thread, queries

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path", ["/", "/tasks/", "/tasks/?state=open", "/tasks/?env=default&q=Task", lead_thread]
)
def test_the_query_count_does_not_grow_with_tasks(client, viewer, source, path):
    client.force_login(viewer)
    assert queries(client, source, 2, path) == queries(client, source, 40, path)


@pytest.mark.parametrize("path", ["/", lead_thread])
def test_an_admins_pages_with_the_menus_counts_do_not_grow_with_tasks(client, source, path):
    login_as(client, ADMIN)
    assert queries(client, source, 2, path) == queries(client, source, 40, path)
