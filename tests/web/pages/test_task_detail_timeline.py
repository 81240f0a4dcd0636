"""The task page's timeline, folded: a task with hundreds of runs shows its newest
entries and a plain link to the ones before them, page by page."""

import html as html_lib
import re

import pytest

from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Task
from supervisor.web import fragments
from supervisor.web.pages import task_detail as task_page
from tests.support.factories import at, task_events

pytestmark = pytest.mark.django_db

ENTRY = re.compile(r'<li class="tl-(?!day)[^"]*">\s*<time datetime="([^"]*)"')
EARLIER = re.compile(r'<a href="([^"]*timeline_before=[^"]*)">Show earlier entries</a>')


def run_events(ordinal: int, *, finished: bool = True) -> list[dict]:
    """Run `ordinal` of task:t0's child thread: requested, and finished unless not."""
    run, start = f"thread:t0:{ordinal}", 100 + ordinal * 10
    events = [
        {
            "id": f"t0-r{ordinal}",
            "type": "run.requested",
            "at": at(start),
            "data": {
                "thread": "thread:t0",
                "run": run,
                "ordinal": ordinal,
                "trigger": {"kind": "message"},
            },
        }
    ]
    if finished:
        events.append(
            {
                "id": f"t0-f{ordinal}",
                "type": "run.finished",
                "at": at(start + 1),
                "data": {
                    "thread": "thread:t0",
                    "run": run,
                    "status": "completed",
                    "summary": f"result of run {ordinal}",
                },
            }
        )
    return events


def entries(page: str) -> list[str]:
    """The timeline's entries on a page, as their times."""
    return ENTRY.findall(page)


def get(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def ten(source, monkeypatch):
    """task:t0 with a timeline of exactly ten entries, and pages of ten."""
    monkeypatch.setattr(task_page, "TIMELINE_PAGE", 10)
    # delegation, run 1 requested and finished, the report, the wake: 5; runs 2 and 3: 4.
    apply_events(source, task_events(0) + run_events(2) + run_events(3))
    apply_events(source, run_events(4, finished=False))
    return Task.objects.get(task_id="task:t0")


def test_a_timeline_of_one_page_has_no_fold(client, viewer, ten):
    client.force_login(viewer)
    page = get(client, f"/tasks/{ten.pk}/")
    assert len(entries(page)) == 10
    assert "timeline-fold" not in page and "timeline_before" not in page


def test_one_entry_more_folds_the_oldest_behind_a_link_that_shows_it(client, viewer, source, ten):
    apply_events(source, run_events(4))  # the eleventh entry
    client.force_login(viewer)
    page = get(client, f"/tasks/{ten.pk}/")
    shown = entries(page)
    assert len(shown) == 10 and shown[-1] == "2026-11-05T22:02:21+00:00"
    assert "The newest 10 of 11 entries." in page
    assert '<section id="timeline" ' in page
    link = html_lib.unescape(EARLIER.search(page).group(1))
    assert link.startswith(f"/tasks/{ten.pk}/?timeline_before=") and link.endswith("#timeline-h")
    assert "(1 before these)" in page

    earlier = get(client, link.split("#")[0])
    assert entries(earlier) == ["2026-11-05T22:00:00+00:00"]  # the delegation
    assert "task.delegated" in earlier
    assert "Entries 1 to 1 of 11." in earlier
    assert "Show earlier entries" not in earlier
    assert f'<a href="/tasks/{ten.pk}/#timeline-h">Back to the newest entries</a>' in earlier
    assert "(10 after these)" in earlier
    # An earlier page is not the live one: the socket's newest page does not replace it.
    assert '<section id="timeline-page" ' in earlier and '<section id="timeline" ' not in earlier


def test_the_earlier_links_walk_the_whole_timeline_once(client, viewer, source, monkeypatch):
    monkeypatch.setattr(task_page, "TIMELINE_PAGE", 4)
    apply_events(source, task_events(0) + run_events(2) + run_events(3) + run_events(4))
    task = Task.objects.get(task_id="task:t0")
    client.force_login(viewer)
    whole = []
    url = f"/tasks/{task.pk}/"
    pages = 0
    while url:
        page = get(client, url)
        whole = entries(page) + whole
        found = EARLIER.search(page)
        url = html_lib.unescape(found.group(1)).split("#")[0] if found else None
        pages += 1
    assert pages == 3  # 11 entries: 4, 4 and 3
    assert len(whole) == 11 and whole == sorted(whole)
    assert len(set(whole)) == 11


def test_a_cursor_not_given_out_shows_the_newest_page(client, viewer, source, ten):
    apply_events(source, run_events(4))
    client.force_login(viewer)
    page = get(client, f"/tasks/{ten.pk}/?timeline_before=not-a-cursor")
    assert "The newest 10 of 11 entries." in page
    assert '<section id="timeline" ' in page


def test_the_live_timeline_is_the_newest_page_and_follows_new_entries(source, ten):
    apply_events(source, run_events(4))
    (part,) = [p for p in fragments.task_detail(ten.pk, False) if 'id="timeline"' in p[:40]]
    assert 'hx-swap-oob="true"' in part and "The newest 10 of 11 entries." in part
    apply_events(source, run_events(5))
    (part,) = [p for p in fragments.task_detail(ten.pk, False) if 'id="timeline"' in p[:40]]
    assert "The newest 10 of 13 entries." in part and "(3 before these)" in part
    assert entries(part)[-1] == "2026-11-05T22:02:31+00:00"  # run 5 finished
