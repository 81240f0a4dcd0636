"""The task page by keyboard alone, in a real browser: the suggested action is a Tab or
two past the problem, and the actions list is not behind every flag card's own forms."""

import re

import pytest
from playwright.sync_api import expect

from supervisor.core.models import Task
from tests.support.browser import RETRY_PORT, log_in, seed, wait_for_socket

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "a-test-secret-of-some-length"
DELIVER = re.compile("Deliver the latest result")


def _tabs_from(page, start, target, most: int) -> int:
    start.focus()
    for count in range(1, most + 1):
        page.keyboard.press("Tab")
        if target.evaluate("element => element === document.activeElement"):
            return count
    raise AssertionError(f"not reached in {most} Tabs from {start}")


def test_deliver_is_a_tab_past_the_problem(new_page, live_app, acting_user, source):
    source.connector = "webhook"
    source.connector_settings = {"url": "http://127.0.0.1:9/", "secret": SECRET, "timeout": 5}
    source.save()
    seed(live_app, source)
    task = Task.objects.get(task_id=RETRY_PORT)
    page = new_page("light")
    log_in(page, acting_user, f"/tasks/{task.pk}/")
    wait_for_socket(page)
    chip = page.locator("a.problem-link")

    # The problem's advice carries its action: one Tab after the problem.
    headline = page.locator(".problem-card").get_by_role("link", name=DELIVER)
    assert _tabs_from(page, chip, headline, 3) == 1

    # The actions list: past the problem's three forms (7 stops), its assignee (2), the
    # facets' summaries and the open flag card's two disclosures. Each card's forms used
    # to come first (44 Tabs from the top, 30 from here); they are folded under "Act on
    # this flag alone".
    listed = page.locator(".suggested-action").get_by_role("link", name=DELIVER)
    assert _tabs_from(page, chip, listed, 40) <= 15

    # A card's forms are a disclosure away, and work once opened.
    card = page.locator("#flags .facet-detail[open] .flag-card").first
    expect(card.get_by_role("button", name="Acknowledge")).to_be_hidden()
    card.locator("details.flag-own-actions > summary").click()
    expect(card.get_by_role("button", name="Acknowledge")).to_be_visible()

    headline.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#action-preview .sent-text")).to_be_visible()
