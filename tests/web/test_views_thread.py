"""The thread page: the tasks a thread delegated, as a tree, grandchildren included."""

from datetime import timedelta

import pytest

from supervisor.core import clock
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Thread
from supervisor.web.pages.thread import TREE_DEPTH
from tests.support.factories import at

pytestmark = pytest.mark.django_db


def chain(source, depth: int) -> None:
    """thread:c0 delegates to thread:c1, which delegates to thread:c2, ..."""
    apply_events(
        source,
        [
            {
                "id": f"c{n}",
                "type": "task.delegated",
                "at": at(n),
                "data": {
                    "task": f"task:c{n}",
                    "parent_thread": f"thread:c{n}",
                    "child_thread": f"thread:c{n + 1}",
                    "title": f"Level {n}",
                    "mode": "async",
                },
            }
            for n in range(depth)
        ],
    )


def thread_page(client, thread_id: str) -> str:
    pk = Thread.objects.get(thread_id=thread_id).pk
    return client.get(f"/threads/{pk}/").content.decode()


def test_the_tree_has_children_and_grandchildren_linking_to_task_pages(
    client, viewer, three_levels
):
    client.force_login(viewer)
    html = thread_page(client, "thread:lead-release")
    plan, audit, check = (
        html.index("Write the 4.3 release plan"),
        html.index("Audit the 4.3 schema"),
        html.index("Check the orders indexes"),
    )
    assert plan < audit < check
    assert html.count('<ul role="list">') == 2  # two nested levels below the first
    # The task's three open flags are one problem, headed by what the parent was given.
    headline = '<span class="flag" title="flag kind: stale_result">Stale result handed on</span>'
    assert headline in html
    assert '<span class="facet" title="flag kind: premature_completion">' in html
    assert 'class="row-link">Write the 4.3 release plan</a>' in html


def test_a_child_thread_names_the_task_that_delegated_it(client, viewer, three_levels):
    client.force_login(viewer)
    html = thread_page(client, "thread:schema-audit")
    assert "Delegated by" in html and ">Audit the 4.3 schema</a> from <a" in html
    assert "Check the orders indexes" in html and "Write the 4.3 release plan" not in html


def test_the_tree_stops_at_its_depth_limit(client, viewer, source):
    chain(source, TREE_DEPTH + 2)
    client.force_login(viewer)
    html = thread_page(client, "thread:c0")
    assert f"Level {TREE_DEPTH - 1}<" in html and f"Level {TREE_DEPTH}<" not in html
    assert f"Only {TREE_DEPTH} levels are shown" in html
    assert "(more below: open the child thread)" in html


def test_a_delegation_cycle_does_not_loop(client, viewer, source):
    chain(source, 2)
    apply_events(
        source,
        [
            {
                "id": "back",
                "type": "task.delegated",
                "at": at(5),
                "data": {
                    "task": "task:back",
                    "parent_thread": "thread:c2",
                    "child_thread": "thread:c0",
                    "title": "Back to the top",
                    "mode": "async",
                },
            }
        ],
    )
    client.force_login(viewer)
    html = thread_page(client, "thread:c0")
    assert html.count("Level 0<") == 1 and "Back to the top" in html


def test_an_unknown_thread_is_404(client, viewer):
    client.force_login(viewer)
    assert client.get("/threads/999999/").status_code == 404


def test_a_threads_open_flags_come_the_longest_open_first(client, viewer, source):
    # Every list of problems, the most severe first, then the longest open.
    chain(source, 1)
    now = clock.now()
    for minutes, kind in ((0, "late_wake"), (-30, "orphan_wake")):
        finding = Finding(kind, "thread", "thread:c0", {"text": f"{kind} on it"})
        do_open_flag(source.namespace_id, finding, now + timedelta(minutes=minutes))
    client.force_login(viewer)
    html = thread_page(client, "thread:c0")
    assert html.index("orphan_wake on it") < html.index("late_wake on it")
