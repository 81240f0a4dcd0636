"""A task with many runs in a real browser: its timeline folded to the newest entries,
the earlier ones a plain link away, live on the newest page, and fit for a phone."""

import pytest
from playwright.sync_api import expect

from supervisor.core.models import Task
from supervisor.web.pages.task_detail import TIMELINE_PAGE
from tests.support.browser import log_in, wait_for_socket
from tests.support.factories import at, task_events

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}


def run(ordinal: int) -> list[dict]:
    """Run `ordinal` of task:t0's child thread, requested and finished: two entries."""
    name, start = f"thread:t0:{ordinal}", 100 + ordinal * 10
    return [
        {
            "id": f"t0-r{ordinal}",
            "type": "run.requested",
            "at": at(start),
            "data": {
                "thread": "thread:t0",
                "run": name,
                "ordinal": ordinal,
                "trigger": {"kind": "message"},
            },
        },
        {
            "id": f"t0-f{ordinal}",
            "type": "run.finished",
            "at": at(start + 1),
            "data": {
                "thread": "thread:t0",
                "run": name,
                "status": "completed",
                "summary": f"result of run {ordinal}",
            },
        },
    ]


def test_a_long_timeline_folds_pages_back_and_follows_live(new_page, live_app, acting_user, source):
    # task_events gives five entries; each further run two: one page and a few more.
    runs = TIMELINE_PAGE // 2
    events = task_events(0) + [e for n in range(2, 2 + runs) for e in run(n)]
    assert live_app.post_events(source.token, events)["accepted"] == len(events)
    total = 5 + 2 * runs
    task = Task.objects.get(task_id="task:t0")
    page = new_page("light")
    page.set_viewport_size(PHONE)
    log_in(page, acting_user, f"/tasks/{task.pk}/")
    wait_for_socket(page)
    fold = page.locator("#timeline #timeline-fold")
    expect(fold).to_contain_text(f"The newest {TIMELINE_PAGE} of {total} entries.")
    expect(page.locator("#timeline ol.timeline li:not(.tl-day)")).to_have_count(TIMELINE_PAGE)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

    # Live: a new run's entries arrive on the newest page, and the fold counts on.
    new = run(2 + runs)
    assert live_app.post_events(source.token, new)["accepted"] == 2
    expect(fold).to_contain_text(f"The newest {TIMELINE_PAGE} of {total + 2} entries.")
    expect(page.locator("#timeline")).to_contain_text(f"result of run {2 + runs}")

    # The earlier entries: a plain link, a page of its own that the socket leaves be.
    fold.get_by_role("link", name="Show earlier entries").click()
    earlier = page.locator("#timeline-page")
    expect(earlier).to_contain_text(f"Entries 1 to {total + 2 - TIMELINE_PAGE} of {total + 2}.")
    expect(earlier.locator(".tl-taskdelegated")).to_have_count(1)
    wait_for_socket(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    earlier.get_by_role("link", name="Back to the newest entries").click()
    expect(page.locator("#timeline #timeline-fold")).to_contain_text(
        f"The newest {TIMELINE_PAGE} of {total + 2} entries."
    )
