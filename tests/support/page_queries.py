"""How many queries a list page runs, on a lead thread with many grandchildren."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from supervisor.core import clock
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.models import Flag, Task, Thread
from tests.support.factories import make_tasks


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
