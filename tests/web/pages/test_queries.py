"""List pages run the same number of queries for 2 tasks as for 40."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from supervisor.core import clock
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.models import Flag, Task, Thread
from tests.support.cast import ADMIN, login_as
from tests.support.factories import make_tasks

pytestmark = pytest.mark.django_db


def grandchildren(source, count: int, prefix: str) -> None:
    """`count` tasks under thread:lead, each with one grandchild task, all flagged."""
    make_tasks(source, count, prefix=prefix)
    events = []
    for n in range(count):
        events.append(
            {
                "id": f"{prefix}{n}-sub",
                "type": "task.delegated",
                "at": "2026-11-05T22:30:00Z",
                "data": {
                    "task": f"task:{prefix}{n}-sub",
                    "parent_thread": f"thread:{prefix}{n}",
                    "child_thread": f"thread:{prefix}{n}-sub",
                    "title": f"Sub {n}",
                },
            }
        )
    from supervisor.core.ingest.apply import apply_events

    apply_events(source, events)
    for task_id in Task.objects.values_list("task_id", flat=True):
        do_open_flag(
            source.namespace_id, Finding("stuck", "task", task_id, {"text": "quiet"}), clock.now()
        )


def queries(client, source, count: int, path) -> int:
    Flag.objects.all().delete()
    Task.objects.all().delete()
    grandchildren(source, count, prefix=f"q{count}-")
    url = path() if callable(path) else path
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured)


def lead_thread() -> str:
    return f"/threads/{Thread.objects.get(thread_id='thread:lead').pk}/"


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
