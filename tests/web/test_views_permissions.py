"""A permission cast for every page: stranger, viewer (reads), operator (acts)."""

import pytest

from supervisor.core.models import Flag, Task, Thread
from tests.support.factories import make_tasks

pytestmark = pytest.mark.django_db

ACTION_FORM = 'action="/flags/'


@pytest.fixture
def pages(source, three_levels, silent_source):
    make_tasks(source, 2)
    task = Task.objects.get(task_id="task:release-plan")
    thread = Thread.objects.get(thread_id="thread:lead-release")
    return {
        "overview": "/",
        "list": "/tasks/",
        "task": f"/tasks/{task.pk}/",
        "thread": f"/threads/{thread.pk}/",
    }


@pytest.mark.parametrize("page", ["overview", "list", "task", "thread"])
def test_a_stranger_is_sent_to_log_in(client, pages, page):
    response = client.get(pages[page])
    assert response.status_code == 302
    assert response.url.startswith("/login/?next=")


@pytest.mark.parametrize("page", ["overview", "list", "task", "thread"])
def test_a_viewer_reads_every_page_without_action_forms(client, viewer, pages, page):
    client.force_login(viewer)
    response = client.get(pages[page])
    assert response.status_code == 200
    assert ACTION_FORM not in response.content.decode()


@pytest.mark.parametrize("page", ["overview", "task"])
def test_an_operator_gets_the_action_forms(client, acting, pages, page):
    client.force_login(acting)
    html = client.get(pages[page]).content.decode()
    assert ACTION_FORM in html
    assert 'name="csrfmiddlewaretoken"' in html


@pytest.mark.parametrize("page", ["list", "thread"])
def test_an_operator_reads_the_pages_without_flag_forms(client, acting, pages, page):
    # The list's bulk actions come later; thread flags are acted on from the overview.
    client.force_login(acting)
    response = client.get(pages[page])
    assert response.status_code == 200
    assert ACTION_FORM not in response.content.decode()


def test_a_stranger_may_not_post_a_flag_action(client, pages):
    flag = Flag.objects.filter(state="open").first()
    response = client.post(f"/flags/{flag.pk}/", {"action": "acknowledge"})
    assert response.status_code == 302 and response.url.startswith("/login/")


def test_a_viewer_may_not_post_a_flag_action(client, viewer, pages):
    client.force_login(viewer)
    flag = Flag.objects.filter(state="open").first()
    assert client.post(f"/flags/{flag.pk}/", {"action": "acknowledge"}).status_code == 403


def test_acting_on_a_source_flag_returns_to_the_overview(client, acting, silent_source):
    client.force_login(acting)
    silent, _ = silent_source
    response = client.post(f"/flags/{silent.pk}/", {"action": "acknowledge"})
    assert response.status_code == 302 and response.url == "/"


# The permission matrix of every URL and its CSRF test are in tests/security/ (the walk).
