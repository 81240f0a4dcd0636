"""Live fragments render the same markup as the pages' partials, out of band."""

import re

import pytest

from supervisor.core.models import Flag, Task, Thread
from supervisor.web import fragments
from tests.support.factories import make_tasks

pytestmark = pytest.mark.django_db

OOB = ' hx-swap-oob="true"'
CSRF_INPUT = re.compile(r'<input type="hidden" name="csrfmiddlewaretoken" value="[^"]*">')


def page(client, url: str) -> str:
    return CSRF_INPUT.sub("", client.get(url).content.decode())


def in_page(part: str, html: str) -> bool:
    assert OOB in part.split(">", 1)[0], f"not out of band: {part[:80]}"
    return part.replace(OOB, "", 1) in html


@pytest.mark.parametrize("can_act", [False, True])
def test_task_detail_parts_are_the_pages_partials(request, client, three_levels, can_act):
    client.force_login(request.getfixturevalue("acting" if can_act else "viewer"))
    task = Task.objects.get(task_id="task:release-plan")
    html = page(client, f"/tasks/{task.pk}/")
    parts = fragments.task_detail(task.pk, can_act)
    ids = [re.search(r'id="([^"]+)"', p).group(1) for p in parts]
    assert ids == ["task-header", "results", "actions", "flags", "timeline"]
    for part in parts:
        assert in_page(part, html), part
    assert ("/actions/deliver/" in parts[2]) is can_act
    assert ('action="/flags/' in parts[3]) is can_act


def test_a_task_row_is_the_lists_row(client, viewer, source):
    make_tasks(source, 3)
    client.force_login(viewer)
    html = page(client, "/tasks/")
    task = Task.objects.get(task_id="task:t1")
    row = fragments.task_row(task.pk)
    assert row.startswith(f'<tr id="task-row-{task.pk}" ')
    assert in_page(row, html)


def test_a_task_row_of_an_unknown_task_is_none(db):
    assert fragments.task_row(123456) is None


@pytest.mark.parametrize("can_act", [False, True])
def test_overview_parts_are_the_pages_partials(
    request, client, three_levels, silent_source, can_act
):
    client.force_login(request.getfixturevalue("acting" if can_act else "viewer"))
    html = page(client, "/")
    parts = fragments.overview(can_act)
    ids = [re.search(r'id="([^"]+)"', p).group(1) for p in parts]
    assert ids == [
        "overview-alerts",
        "overview-tasks",
        "overview-thread-flags",
        "overview-counts",
        "overview-later",
        "overview-sources",
    ]
    for part in parts:
        assert in_page(part, html), part
    assert ('action="/flags/' in parts[0]) is can_act


def test_thread_parts_are_the_pages_partials(client, viewer, three_levels):
    client.force_login(viewer)
    thread = Thread.objects.get(thread_id="thread:lead-release")
    html = page(client, f"/threads/{thread.pk}/")
    parts = fragments.thread_tree(thread.pk)
    assert [re.search(r'id="([^"]+)"', p).group(1) for p in parts] == [
        "thread-flags",
        "thread-tree",
        "thread-runs",
        "thread-timeline",
    ]
    for part in parts:
        assert in_page(part, html), part


def test_a_frame_puts_rows_first_and_ends_with_the_cursor_and_count(source, silent_source):
    make_tasks(source, 1)
    row = fragments.task_row(Task.objects.get().pk)
    alerts = fragments.overview(can_act=False)[0]  # a part that is not a row, given first
    message = fragments.frame(42, [alerts, row], 40)
    assert message.startswith("<tr ")
    assert message.index("<tr ") < message.index('id="overview-alerts"')
    cursor = (
        '<div id="live-cursor" data-change="42" data-from="40" hx-swap-oob="true" hidden></div>'
    )
    assert cursor in message
    count = Flag.objects.filter(state="open").count()
    assert f'<span id="open-flag-count" data-count="{count}" hidden hx-swap-oob="true">' in message


def test_flag_opened_names_the_task_and_its_page(three_levels):
    flag = Flag.objects.filter(task__task_id="task:release-plan").first()
    html = fragments.flag_opened(flag.pk)
    assert html.startswith('<div id="flag-opened" hx-swap-oob="true" hidden ')
    assert f'data-flag="{flag.pk}"' in html and f'data-kind="{flag.kind}"' in html
    assert 'data-title="Write the 4.3 release plan"' in html
    assert f'data-url="/tasks/{flag.task_id}/"' in html


def test_flag_opened_on_a_source_points_to_the_overview(silent_source):
    silent, _ = silent_source
    html = fragments.flag_opened(silent.pk)
    assert 'data-kind="source_silent"' in html and 'data-url="/"' in html
    assert fragments.flag_opened(999999) == ""


def test_fragments_read_a_fixed_handful_of_queries(source, django_assert_max_num_queries):
    make_tasks(source, 30)
    pk = Task.objects.order_by("pk").first().pk
    with django_assert_max_num_queries(3):
        fragments.task_row(pk)
    with django_assert_max_num_queries(8):
        fragments.overview(True)
    # The open-flag count (and the active silences it leaves out), and the sources with
    # their silences for "data as of".
    with django_assert_max_num_queries(3):
        fragments.frame(1, [])
