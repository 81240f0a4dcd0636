"""The overview: open flags by kind and environment, tasks needing action first, each
source's data as of, silent sources in front."""

from datetime import timedelta

import pytest

from supervisor.core import clock
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_acknowledge_flag, do_open_flag, do_snooze_flag
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Task
from supervisor.web.pages.live import open_flag_count
from tests.support.factories import make_tasks, task_events

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


def needing_part(html: str) -> str:
    part = html[html.index("Tasks needing action") : html.index("Latest tasks without")]
    return part.split('id="taken-up-h"')[0]


def test_tasks_needing_action_come_most_severe_first_then_longest_waiting(client, viewer, source):
    make_tasks(source, 4)
    start = clock.now()
    opened = [(2, "stuck", 0), (0, "stuck", 5), (3, "stale_result", 10)]  # minutes after
    for n, kind, minutes in opened:
        finding = Finding(kind, "task", f"task:t{n}", {"text": "quiet"})
        do_open_flag(source.namespace_id, finding, start + timedelta(minutes=minutes))
    client.force_login(viewer)
    with clock.virtual_clock(start + timedelta(hours=1)):
        html = client.get("/").content.decode()
    needing = needing_part(html)
    # The critical one first though it is the newest; then the warnings, oldest first.
    assert needing.index("Task 3") < needing.index("Task 2") < needing.index("Task 0")
    assert "Task 1" not in needing
    assert '<span class="severity severity-critical">critical</span>' in needing
    assert "Task 1" in html[html.index("Latest tasks without") :]


def test_acknowledged_and_snoozed_flags_leave_the_counts_and_are_shown_apart(
    client, viewer, user, source
):
    make_tasks(source, 3)
    now = clock.now()
    flags = [
        do_open_flag(
            source.namespace_id, Finding("stuck", "task", f"task:t{n}", {"text": "quiet"}), now
        )
        for n in range(3)
    ]
    assert open_flag_count() == 3
    do_acknowledge_flag(flags[0], now, by=user)
    do_snooze_flag(flags[1], now + timedelta(hours=4), now)

    assert open_flag_count() == 1  # the tab title's count
    client.force_login(viewer)
    html = client.get("/").content.decode()
    assert "1 open flag " in html and "and 2 taken up (acknowledged, snoozed or silenced)" in html
    needing = needing_part(html)
    assert "Task 2" in needing and "Task 0" not in needing and "Task 1" not in needing
    taken = html[html.index('id="taken-up-h"') :]
    assert f"acknowledged by {user.get_username()}" in taken
    assert "snoozed until" in taken

    # When the snooze runs out the flag needs attention again.
    with clock.virtual_clock(now + timedelta(hours=5)):
        assert open_flag_count() == 2
        html = client.get("/").content.decode()
    assert "Task 1" in needing_part(html)


def test_a_silent_source_is_shown_first_and_marked(client, viewer, three_levels, silent_source):
    client.force_login(viewer)
    html = client.get("/").content.decode()
    assert html.index("1 source silent") < html.index("open flag")
    assert "Source orchestrator has sent nothing since 09:00." in html
    assert '<li class="source is-silent"><strong>orchestrator</strong>' in html
    assert "The last event from each source:" in html
    assert "Data as of:" not in html  # a label that read as left dangling


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


def test_many_thread_flags_show_the_worst_and_oldest_and_a_link_to_all(
    client, acting, source, silent_source, monkeypatch
):
    """Thread flags are cards with forms: past OVERVIEW_THREAD_FLAGS the overview shows
    the first, the most severe then the longest open (worst first), and links
    to every one, on a page the live socket leaves be."""
    from supervisor.core.queries import overview
    from supervisor.web import fragments

    monkeypatch.setattr(overview, "OVERVIEW_THREAD_FLAGS", 2)
    make_tasks(source, 3)  # a refused delegation on thread:lead, the oldest
    for n in range(2):
        do_open_flag(
            source.namespace_id,
            Finding("orphan_wake", "thread", f"thread:t{n}", {"text": f"orphan {n}"}),
            clock.now() + timedelta(minutes=n),
        )
    client.force_login(acting)
    html = client.get("/").content.decode()
    assert '<section id="overview-thread-flags" ' in html
    assert "1 delegation(s) on this thread were refused." in html and "orphan 0" in html
    assert "orphan 1" not in html  # the newest
    assert html.index("refused.") < html.index("orphan 0")
    assert "The first 2 of 3:" in html and "(1 more)" in html
    assert '<a href="/?thread_flags=all#thread-flags-h">show all flags on threads</a>' in html
    # The live part is the same first two.
    (part,) = [p for p in fragments.overview(True) if 'id="overview-thread-flags"' in p[:40]]
    assert "orphan 0" in part and "orphan 1" not in part and "(1 more)" in part

    every = client.get("/?thread_flags=all").content.decode()
    assert '<section id="overview-thread-flags-all" ' in every
    assert every.count('<article class="flag-card flag-open"') == 4  # 3 on threads, 1 source
    assert "orphan 1" in every
    assert "All 3 flags on threads." in every and 'href="/">Back to the live overview</a>' in every


def refused(source) -> None:
    """A warning on a thread: a refused delegation on thread:lead, opened an hour ago."""
    finding = Finding("delegation_rejected", "thread", "thread:lead", {"text": "refused"})
    do_open_flag(source.namespace_id, finding, clock.now() - timedelta(hours=1))


def test_thread_flags_come_after_the_tasks_needing_action(client, viewer, source):
    make_tasks(source, 2)
    refused(source)
    do_open_flag(
        source.namespace_id,
        Finding("stale_result", "task", "task:t1", {"text": "stale"}),
        clock.now(),
    )
    client.force_login(viewer)
    html = client.get("/").content.decode()
    assert html.index("Tasks needing action") < html.index("Flags on threads")


def test_kinds_are_counted_the_most_severe_first_then_the_longest_open(client, viewer, source):
    make_tasks(source, 3)
    refused(source)
    start = clock.now()
    opened = [(0, "stuck", 0), (1, "stuck", 1), (2, "undelivered_result", 5)]
    opened += [(0, "stale_result", 10)]
    for n, kind, minutes in opened:
        finding = Finding(kind, "task", f"task:t{n}", {"text": "x"})
        do_open_flag(source.namespace_id, finding, start + timedelta(minutes=minutes))
    client.force_login(viewer)
    html = client.get("/").content.decode()
    counts = html[html.index('id="counts-h"') : html.index("By environment")]
    order = [
        counts.index(f'title="flag kind">{kind}<')
        for kind in ("undelivered_result", "stale_result", "delegation_rejected", "stuck")
    ]
    # stuck counts 2, but is a warning; the refused delegation is an older warning
    assert order == sorted(order)


def test_flags_on_threads_are_counted_beside_the_environments(client, viewer, source):
    make_tasks(source, 1)
    refused(source)
    do_open_flag(
        source.namespace_id, Finding("stuck", "task", "task:t0", {"text": "x"}), clock.now()
    )
    client.force_login(viewer)
    html = client.get("/").content.decode()
    assert "2 open flags awaiting attention" in html
    assert '<span class="n">1</span> default</a>' in html
    assert '<span class="n">1</span> <span class="muted">on threads and sources' in html


def test_few_thread_flags_need_no_link(client, viewer, source, silent_source):
    make_tasks(source, 1)
    client.force_login(viewer)
    html = client.get("/").content.decode()
    assert "Flags on threads" in html and "show all flags on threads" not in html
