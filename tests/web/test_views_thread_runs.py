"""A thread's page lists its runs (newest first, bounded, each with its status,
trigger, result and the task that owns it) and a timeline of its runs, wakes and
background items in time order: `stuck` says "look at the child thread"."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Run, Task, Thread
from supervisor.web.pages.thread import THREAD_RUNS
from tests.support.cast import ADMIN, OPERATOR, VIEWER, login_as
from tests.support.stories import child_thread_story, event

pytestmark = pytest.mark.django_db


def section(html: str, id_: str) -> str:
    start = html.index(f'<section id="{id_}"')
    return html[start : html.index("</section>", start)]


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


@pytest.mark.parametrize("role", [VIEWER, OPERATOR, ADMIN])
def test_the_child_threads_page_lists_its_runs_with_their_owner(client, source, role):
    thread = child_thread_story(source)
    task = Task.objects.get(task_id="task:x")
    login_as(client, role)

    runs = section(client.get(f"/threads/{thread.pk}/").content.decode(), "thread-runs")

    read = text_of(runs)
    assert "Runs (3)" in read
    # Newest first, each with its status, trigger and result in short.
    assert read.index("c:3") < read.index("c:2") < read.index("c:1")
    assert "failed" in read and "Stopped: the provider is overloaded." in read
    assert "All 212 tests pass." in read and "wake c:w1" in read
    # Owned runs name their task and why; the message-started one is nobody's.
    assert runs.count(f'href="/tasks/{task.pk}/"') == 2
    assert "owned: first run" in read and "owned: woken by wake c:w1" in read
    assert "no task not owned: message-started follow-up" in read


def test_the_timeline_tells_runs_wakes_and_items_in_time_order(client, source):
    thread = child_thread_story(source)
    login_as(client, VIEWER)

    timeline = text_of(
        section(client.get(f"/threads/{thread.pk}/").content.decode(), "thread-timeline")
    )

    order = [
        "run 1 requested (delegation)",
        "run 1 started",
        "command pytest -q started",
        "run 1 completed: Waiting for the tests.",
        "command pytest -q finished (completed)",
        "wake queued (background c:bg): pytest -q finished",
        "run 2 requested (wake)",
        "wake delivered",
        "run 2 completed: All 212 tests pass.",
        "run 3 failed: Stopped: the provider is overloaded.",
    ]
    places = [timeline.index(words) for words in order]
    assert places == sorted(places)


def many_runs(source, thread: str, count: int, start: int = 1) -> None:
    apply_events(
        source,
        [
            event(
                f"{thread}-{n}",
                "run.requested",
                n,
                thread=thread,
                run=f"{thread}:{n}",
                ordinal=n,
                trigger={"kind": "message"},
            )
            for n in range(start, start + count)
        ],
    )


def test_a_long_thread_shows_its_newest_runs_and_counts_the_rest(client, source):
    many_runs(source, "thread:long", THREAD_RUNS + 7)
    thread = Thread.objects.get(thread_id="thread:long")
    login_as(client, VIEWER)

    runs = section(client.get(f"/threads/{thread.pk}/").content.decode(), "thread-runs")

    assert runs.count("<tr>") == THREAD_RUNS + 1  # with the header row
    assert f"thread:long:{THREAD_RUNS + 7}<" in runs and "thread:long:8<" in runs
    assert "thread:long:7<" not in runs
    assert "7 older runs not shown." in runs


def test_the_page_runs_as_many_queries_for_500_runs_as_for_50(client, source):
    child_thread_story(source)
    thread = Thread.objects.get(thread_id="thread:c")
    login_as(client, VIEWER)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(f"/threads/{thread.pk}/").status_code == 200
        return len(captured)

    many_runs(source, "thread:c", 50, start=100)
    few = queries()
    many_runs(source, "thread:c", 450, start=150)
    assert Run.objects.filter(thread=thread).count() == 503
    assert queries() == few
