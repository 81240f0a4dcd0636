"""The overview: open flags by kind and environment, tasks needing action first, each
source's data as of, silent sources in front."""

import pytest

from supervisor.core import clock
from supervisor.core.flags import do_open_flag
from supervisor.core.ingest import apply_events
from supervisor.core.models import Flag, Task
from supervisor.core.snapshot import Finding
from tests.factories import make_tasks, task_events

pytestmark = pytest.mark.django_db


def test_open_flags_are_counted_by_kind_with_links_to_the_list(client, viewer, three_levels):
    client.force_login(viewer)
    html = client.get("/").content.decode()
    assert "3 open flags" in html
    assert '<a href="/tasks/?flag=stale_result"><span class="n">1</span> Stale result' in html


def test_open_flags_are_counted_by_the_tasks_environment(client, viewer, source):
    events = task_events(0) + task_events(1, prefix="r")
    events[0]["data"]["target_env"] = "gpu-box"
    apply_events(source, events)
    for task in Task.objects.all():
        finding = Finding("stuck", "task", task.task_id, {"text": "quiet"})
        do_open_flag(source.namespace_id, finding, clock.now())
    client.force_login(viewer)
    html = client.get("/").content.decode()
    assert '<a href="/tasks/?env=gpu-box&amp;state=open"><span class="n">1</span> gpu-box' in html
    assert '<span class="n">1</span> default</a>' in html


def test_tasks_needing_action_come_first_most_recently_flagged_first(client, viewer, source):
    make_tasks(source, 3)
    for n in (2, 0):  # task 0 flagged last
        finding = Finding("stuck", "task", f"task:t{n}", {"text": "quiet"})
        do_open_flag(source.namespace_id, finding, clock.now())
    client.force_login(viewer)
    html = client.get("/").content.decode()
    needing = html[html.index("Tasks needing action") : html.index("Latest tasks without")]
    assert needing.index("Task 0") < needing.index("Task 2") and "Task 1" not in needing
    assert "Task 1" in html[html.index("Latest tasks without") :]


def test_a_silent_source_is_shown_first_and_marked(client, viewer, three_levels, silent_source):
    client.force_login(viewer)
    html = client.get("/").content.decode()
    assert html.index("1 source silent") < html.index("open flag")
    assert "Source orchestrator has sent nothing since 09:00." in html
    assert '<li class="source is-silent"><strong>orchestrator</strong>' in html
    assert "Data as of:" in html


def test_thread_flags_link_to_their_thread(client, viewer, source, silent_source):
    make_tasks(source, 1)  # makes thread:lead
    client.force_login(viewer)
    html = client.get("/").content.decode()
    assert "Flags on threads" in html
    assert 'on <a href="/threads/' in html and ">thread thread:lead</a>" in html


def test_no_flags_reads_all_clear(client, viewer, source):
    make_tasks(source, 2)
    client.force_login(viewer)
    html = client.get("/").content.decode()
    assert "0 open flags" in html and "No open flags: all clear." in html
    assert Flag.objects.count() == 0
