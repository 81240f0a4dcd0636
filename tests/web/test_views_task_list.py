"""The task list: filters, search, keyset pagination that keeps them, bulk selection."""

import re

import pytest

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag, do_resolve_flag
from supervisor.core.ingest.apply import apply_events
from supervisor.core.queries.task_query import PAGE_SIZE
from tests.support.factories import make_tasks, task_events

pytestmark = pytest.mark.django_db


def titles(html: str) -> list[str]:
    return re.findall(r'class="row-link">([^<]+)</a>', html)


@pytest.fixture
def flagged(source):
    make_tasks(source, 3)
    now = clock.now()
    do_open_flag(source.namespace_id, Finding("stuck", "task", "task:t0", {"text": "q"}), now)
    flag = do_open_flag(
        source.namespace_id, Finding("dispatch_lag", "task", "task:t1", {"text": "q"}), now
    )
    do_resolve_flag(flag, now)
    return source


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("flag=stuck", ["Task 0"]),  # a kind alone means its open flags
        ("flag=dispatch_lag", []),
        ("flag=dispatch_lag&state=resolved", ["Task 1"]),
        ("flag=dispatch_lag&state=", ["Task 1"]),
        ("state=open", ["Task 0"]),
        ("state=resolved", ["Task 1"]),
        ("status=completed&q=Task 2", ["Task 2"]),
        ("parent=thread:lead", ["Task 2", "Task 1", "Task 0"]),
        ("parent=thread:nobody", []),
    ],
)
def test_the_list_filters(client, viewer, flagged, query, expected):
    client.force_login(viewer)
    assert titles(client.get(f"/tasks/?{query}").content.decode()) == expected


def test_the_list_filters_by_environment_and_namespace(client, viewer, source):
    events = task_events(0)
    events[0]["data"]["target_env"] = "gpu-box"
    apply_events(source, events)
    other, _ = do_create_source("elsewhere")
    make_tasks(other, 1, prefix="o", title="Other")
    client.force_login(viewer)
    assert titles(client.get("/tasks/?env=gpu-box").content.decode()) == ["Task 0"]
    assert titles(client.get("/tasks/?namespace=elsewhere").content.decode()) == ["Other 0"]
    html = client.get("/tasks/").content.decode()
    assert '<option value="gpu-box">gpu-box</option>' in html
    assert '<option value="elsewhere">elsewhere</option>' in html


def test_the_next_page_keeps_the_filters(client, viewer, source):
    make_tasks(source, PAGE_SIZE + 2)
    client.force_login(viewer)
    html = client.get("/tasks/?status=completed").content.decode()
    link = re.search(r'<a href="\?([^"]+)" rel="next">', html).group(1).replace("&amp;", "&")
    assert link.startswith("status=completed&cursor=")
    assert len(titles(client.get(f"/tasks/?{link}").content.decode())) == 2


def test_rows_have_a_labelled_checkbox_and_a_select_all(client, viewer, source):
    make_tasks(source, 2)
    client.force_login(viewer)
    html = client.get("/tasks/").content.decode()
    assert '<input type="checkbox" id="select-all" form="bulk">' in html
    label = '<label for="select-all" class="visually-hidden">Select all tasks on this page</label>'
    assert label in html
    assert 'name="task" value="' in html and 'aria-label="Select Task 1"' in html
    # A viewer may select but not act: the bulk form says so instead of offering actions.
    assert "may look but not act" in html and 'name="kind"' not in html


def test_the_filter_form_works_with_and_without_htmx(client, viewer, source):
    make_tasks(source, 1)
    client.force_login(viewer)
    html = client.get("/tasks/").content.decode()
    assert 'method="get" action="/tasks/"' in html
    assert 'hx-get="/tasks/" hx-target="#task-rows" hx-swap="outerHTML" hx-push-url="true"' in html


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("flag=14", "“14” is no flag kind"),
        ("flag=stuck&state=opened", "“opened” is no flag state"),
        ("status=done", "“done” is no status"),
        ("namespace=nowhere", "no namespace is named “nowhere”"),
    ],
)
def test_a_bad_filter_is_refused_saying_which_and_why(client, viewer, flagged, query, named):
    """Each gave an empty list, or (a state) was dropped, without a word; the API
    answers the same filters with a 400."""
    client.force_login(viewer)
    # htmx swaps no 4xx answer by default: the form's own request gets the words with a 200.
    for headers, status in (({}, 400), ({"HTTP_HX_REQUEST": "true"}, 200)):
        response = client.get(f"/tasks/?{query}", **headers)
        html = response.content.decode()
        assert response.status_code == status
        assert named in html
        assert titles(html) == []
