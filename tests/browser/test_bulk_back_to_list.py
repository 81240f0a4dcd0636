"""A bulk acknowledge returns to the list the operator came from, its filters shown in
the form and its tasks listed (it ended on `/tasks/?flag=14&state=open`,
"No task matches these filters", the filter nowhere in the form)."""

import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import log_in, seed

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_bulk_acknowledge_returns_to_the_filtered_list(new_page, live_app, acting_user, source):
    seed(live_app, source)
    page = new_page("light")
    log_in(page, acting_user, "/")
    # The overview's count of a kind opens the list filtered by it.
    page.locator("#overview-counts a", has_text="Stale result handed on").click()
    expect(page.locator("#flag")).to_have_value("stale_result")
    row = page.locator("#task-rows tr.task-row", has_text="Port the retry loop")
    row.get_by_role("checkbox").check()
    page.get_by_label("Act on tasks:").select_option("acknowledge")
    page.get_by_role("button", name="Preview…").click()
    # The preview's way back is the same list.
    back = page.get_by_role("link", name="← Tasks")
    expect(back).to_have_attribute("href", "/tasks/?flag=stale_result&state=open")
    page.get_by_role("button", name=re.compile(r"^Confirm: acknowledge 1 flag")).click()
    expect(page.locator("#messages")).to_contain_text("Acknowledged 1 flag on 1 task")
    expect(page).to_have_url(re.compile(r"/tasks/\?flag=stale_result&state=open$"))
    # The list shown is the one its form says, and it is not empty.
    expect(page.locator("#flag")).to_have_value("stale_result")
    expect(page.locator("#state")).to_have_value("open")
    expect(page.locator("#task-rows")).not_to_contain_text("No task matches")
    expect(page.locator("#task-rows tr.task-row", has_text="Port the retry loop")).to_be_visible()
    # Back from the preview, too.
    page.get_by_role("checkbox", name=re.compile("Select Port the retry loop")).check()
    page.get_by_label("Act on tasks:").select_option("snooze")
    page.get_by_role("button", name="Preview…").click()
    page.get_by_role("link", name="← Tasks").click()
    expect(page.locator("#flag")).to_have_value("stale_result")
    expect(page.locator("#task-rows tr.task-row", has_text="Port the retry loop")).to_be_visible()
