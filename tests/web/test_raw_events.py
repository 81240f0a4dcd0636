"""The raw events behind a flag: the ones its evidence names, then the rest its rule
read for the task, as escaped JSON, bounded, readable by a viewer, a 404 for no flag."""

import html
import json
from datetime import datetime

import pytest

from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.events import LIMIT
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Task
from tests.support.factories import at, task_events

pytestmark = pytest.mark.django_db

NOW = datetime.fromisoformat("2026-11-05T23:00:00+00:00")


def flag_on(source, task_id: str, events: list[str]) -> Flag:
    return do_open_flag(
        source.namespace_id,
        Finding("stuck", "task", task_id, {"events": events, "text": "No progress."}),
        NOW,
    )


def events_html(client, flag: Flag, **headers) -> str:
    response = client.get(f"/flags/{flag.pk}/events/", headers=headers)
    assert response.status_code == 200
    return response.content.decode()


def test_the_named_events_come_first_as_pretty_json(client, viewer, source):
    apply_events(source, task_events(0))
    flag = flag_on(source, "task:t0", ["t0-rep"])
    client.force_login(viewer)
    page = events_html(client, flag, **{"HX-Request": "true"})
    named, _, rest = page.partition("The task’s other events the rule read")
    assert "Named in the evidence" in named
    assert "<code>t0-rep</code>" in named and "<code>t0-d</code>" not in named
    # The event in the contract's shape, indented, as the orchestrator sent it.
    shown = named.split('<pre class="raw-json"><code>')[1].split("</code>")[0]
    assert json.loads(html.unescape(shown)) == {
        "id": "t0-rep",
        "type": "task.reported",
        "at": "2026-11-05T22:00:03Z",
        "env": "default",
        "data": task_events(0)[3]["data"],
    }
    assert shown.startswith("{\n  &quot;id&quot;: &quot;t0-rep&quot;,\n  &quot;type&quot;")
    for event_id in ("t0-d", "t0-r1", "t0-f1", "t0-w"):
        assert f"<code>{event_id}</code>" in rest
    assert "<html" not in page  # htmx gets the list alone


def test_an_event_is_escaped_not_run(client, viewer, source):
    events = task_events(0, title="<script>alert('x')</script>")
    apply_events(source, events)
    flag = flag_on(source, "task:t0", ["t0-d"])
    client.force_login(viewer)
    page = events_html(client, flag)
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page


def test_the_list_is_bounded_and_says_how_many_it_left_off(client, viewer, source):
    events = task_events(0)
    extra = LIMIT + 7
    events += [
        {
            "id": f"t0-m{n}",
            "type": "run.requested",
            "at": at(100 + n),
            "data": {
                "thread": "thread:t0",
                "run": f"thread:t0:{n + 2}",
                "ordinal": n + 2,
                "trigger": {"kind": "message"},
            },
        }
        for n in range(extra)
    ]
    apply_events(source, events)
    flag = flag_on(source, "task:t0", ["t0-d"])
    client.force_login(viewer)
    page = events_html(client, flag)
    # Read: the delegation (named), the report, run 1's two events, the wake, the extra runs.
    left_off = 3 + 1 + extra - LIMIT
    assert f"{left_off} earlier events left off; only the newest {LIMIT} are shown." in page
    assert page.count('class="raw-event"') == 1 + LIMIT
    assert f"<code>t0-m{extra - 1}</code>" in page  # the newest kept
    assert "<code>t0-r1</code>" not in page  # the oldest left off
    assert "<code>t0-d</code>" in page  # named ones always shown


def test_an_event_named_but_not_stored_is_said(client, viewer, source):
    apply_events(source, task_events(0))
    flag = flag_on(source, "task:t0", ["t0-d", "gone-1"])
    client.force_login(viewer)
    page = events_html(client, flag)
    assert "Not stored (never received, or pruned since): <code>gone-1</code>." in page


def test_a_viewer_may_read_them_and_a_stranger_is_sent_to_log_in(client, viewer, source):
    apply_events(source, task_events(0))
    flag = flag_on(source, "task:t0", ["t0-d"])
    response = client.get(f"/flags/{flag.pk}/events/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    client.force_login(viewer)
    page = events_html(client, flag)
    assert "<h1>Raw events behind “" in page  # without htmx: a page of its own
    assert f'href="/tasks/{flag.task_id}/#flag-card-{flag.pk}"' in page


def test_no_such_flag_is_a_404(client, viewer, source):
    client.force_login(viewer)
    assert client.get("/flags/999999/events/").status_code == 404


def test_only_read_not_written(client, acting, source):
    apply_events(source, task_events(0))
    flag = flag_on(source, "task:t0", ["t0-d"])
    client.force_login(acting)
    assert client.post(f"/flags/{flag.pk}/events/").status_code == 405


def test_a_thread_flag_shows_only_what_its_evidence_names(client, viewer, source, silent_source):
    apply_events(source, task_events(0))
    _, on_thread = silent_source
    on_thread.evidence = {"events": ["t0-w"], "text": "refused"}
    on_thread.save()
    client.force_login(viewer)
    page = events_html(client, on_thread)
    assert page.count('class="raw-event"') == 1 and "<code>t0-w</code>" in page


def test_the_task_page_folds_them_and_fetches_them_on_open(client, viewer, source):
    apply_events(source, task_events(0))
    flag = flag_on(source, "task:t0", ["t0-d", "t0-rep"])
    client.force_login(viewer)
    task = Task.objects.get(task_id="task:t0")
    page = client.get(f"/tasks/{task.pk}/").content.decode()
    fold = page.split(f'id="raw-events-{flag.pk}"')[1].split("</details>")[0]
    assert "<summary>Raw events (2)" in fold
    assert f'hx-get="/flags/{flag.pk}/events/"' in fold
    assert 'hx-trigger="toggle once from:closest details"' in fold
    assert f'<a href="/flags/{flag.pk}/events/">' in fold  # without script
    assert "raw-json" not in page  # nothing fetched until opened
