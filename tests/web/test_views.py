"""The log-in, task list and task detail pages."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from supervisor.core.models import Task
from tests.support.factories import make_tasks

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/", "/tasks/", "/tasks/1/", "/threads/1/"])
def test_pages_need_a_login(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response.url.startswith("/login/")


def test_the_login_page_is_served_with_labelled_fields(client):
    html = client.get("/login/").content.decode()
    assert '<label for="id_username">' in html and '<label for="id_password">' in html


def test_logging_in_leads_to_the_overview(client, user):
    response = client.post("/login/", {"username": "op", "password": "pw-for-tests"}, follow=True)
    assert response.redirect_chain[-1][0] == "/"
    assert response.templates[0].name == "web/overview.html"


def test_the_list_shows_tasks_newest_first(client, user, source):
    make_tasks(source, 3)
    client.force_login(user)
    html = client.get("/tasks/").content.decode()
    assert html.index("Task 2") < html.index("Task 1") < html.index("Task 0")


def test_the_list_filters_by_search(client, user, source):
    make_tasks(source, 3)
    client.force_login(user)
    html = client.get("/tasks/?q=task:t1").content.decode()
    assert "Task 1" in html and "Task 2" not in html


def test_an_htmx_request_gets_the_rows_partial_alone(client, user, source):
    make_tasks(source, 1)
    client.force_login(user)
    html = client.get("/tasks/", headers={"HX-Request": "true"}).content.decode()
    assert 'id="task-rows"' in html and "<html" not in html


def list_queries(client, source, count) -> int:
    make_tasks(source, count, prefix=f"n{count}-")
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/tasks/")
    assert response.status_code == 200
    return len(queries)


def test_the_list_query_count_does_not_grow_with_tasks(client, user, source):
    client.force_login(user)
    small = list_queries(client, source, 2)
    Task.objects.all().delete()
    large = list_queries(client, source, 40)
    assert small == large


def test_the_detail_lists_runs_wakes_and_reports_in_time_order(client, user, source):
    make_tasks(source, 1)
    client.force_login(user)
    task = Task.objects.get()
    html = client.get(f"/tasks/{task.pk}/").content.decode()
    order = ["task.delegated", "run.requested", "run.finished", "task.reported", "wake.queued"]
    positions = [html.index(f'<span class="kind">{kind}</span>') for kind in order]
    assert positions == sorted(positions)
    assert "What the parent was given" in html and "result 0" in html
