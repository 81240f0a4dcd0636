"""Every page fits a phone (390 px) with the texts agents really write: long paths,
URLs and log lines in the results, the diff between them, and the audit (the task
page was 474 px wide, its "given / latest" cards and diff clipped)."""

import copy
import json

import pytest
from playwright.sync_api import expect

from supervisor.core.models import Flag, Task, Thread
from tests.support.browser import (
    EXPECTED_OPEN,
    GIVEN_TEXT,
    LATEST_TEXT,
    RETRY_PORT,
    SEED000,
    Seeded,
    log_in,
    open_kinds,
    page_paths,
)
from tests.support.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
LONG_PATH = "/srv/ci/artifacts/release-2026-12-05/retry-port/integration-tests-full-output.log"
# A wake id as long as real orchestrators' (ids are named in the "given" card's "Via").
LONG_WAKE = "thread:parent-release:wake:01J9Z8Q4W7R2M5N8P3T6V9X2B4-delegated-task-retry-port"
LONG_URL = (
    "https://github.com/example-org/example-repository/pull/812/checks?check_run_id=9876543210"
)


def seed_long_texts(live_app, source) -> Seeded:
    """seed000 with a long path and a long URL in what the parent was given and in the
    latest result, and a long wake id: words a browser cannot break."""
    events = json.loads(
        json.dumps(SEED000["events"])
        .replace(GIVEN_TEXT, f"{GIVEN_TEXT} Log: {LONG_PATH}")
        .replace(LATEST_TEXT, f"{LATEST_TEXT} See {LONG_URL} and {LONG_PATH}.")
        .replace("thread:parent-release:wake:1", LONG_WAKE)
    )
    answer = live_app.post_events(source.token, copy.deepcopy(events))
    assert answer["accepted"] == len(events), answer
    wait_for(lambda: open_kinds() == EXPECTED_OPEN, what="seed000's flags to open")
    return Seeded(
        task_pk=Task.objects.get(task_id=RETRY_PORT).pk,
        thread_pk=Thread.objects.get(thread_id="thread:parent-release").pk,
        open_flags=Flag.objects.filter(state=Flag.OPEN).count(),
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_fits_a_phone_with_long_words(new_page, live_app, acting_user, source, scheme):
    seeded = seed_long_texts(live_app, source)
    page = new_page(scheme)
    page.set_viewport_size(PHONE)
    log_in(page, acting_user, "/")
    paths = {**page_paths(seeded), "audit": "/audit/", "filtered list": "/tasks/?state=open"}
    too_wide = {}
    for name, path in paths.items():
        page.goto(path)
        expect(page.locator("main h1").first).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            # What sticks out, named in the failure.
            too_wide[name] = (
                width,
                page.evaluate(
                    "Array.from(document.querySelectorAll('main *')).filter(e => "
                    "e.getBoundingClientRect().right > innerWidth + 1).slice(0, 6).map(e => "
                    "e.tagName + '.' + e.className)"
                ),
            )
    assert not too_wide, f"wider than 390 px: {too_wide}"
    # The long texts are there, on the task page, not cut away.
    page.goto(f"/tasks/{seeded.task_pk}/")
    expect(page.locator("main")).to_contain_text(LONG_URL)
