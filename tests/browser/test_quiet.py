"""Quiet problems made visible, in a real browser: the admin menu's counts and its
keyboard use, the 404 page's navigation, and a child thread's runs."""

import re

import pytest
from playwright.sync_api import expect

from supervisor.core.models import DeadLetter
from tests.support.browser import log_in
from tests.support.stories import child_thread_story, failures

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_admin_menu_counts_what_waits_and_opens_by_keyboard(new_page, admin_user):
    DeadLetter.objects.bulk_create([DeadLetter(body="{}", error="bad") for _ in range(2)])
    failures(1)
    page = new_page("light")
    log_in(page, admin_user, "/")

    summary = page.locator("#admin-menu > summary")
    expect(summary.locator("#admin-count")).to_contain_text(
        "3 waiting: 2 dead letters, 1 evaluation error"
    )
    # One line at 1280 px: the menu sits beside Overview, not below it.
    overview = page.get_by_role("link", name="Overview", exact=True).bounding_box()
    assert abs(summary.bounding_box()["y"] - overview["y"]) < 8

    page.get_by_role("link", name="Audit", exact=True).focus()
    page.keyboard.press("Tab")
    expect(summary).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#admin-menu")).to_have_attribute("open", "")
    dead = page.get_by_role("link", name=re.compile(r"^Dead letters"))
    expect(dead).to_contain_text("2 dead letters not replayed")
    for _ in range(3):  # Sources, Users, Dead letters
        page.keyboard.press("Tab")
    expect(dead).to_be_focused()
    page.keyboard.press("Enter")
    page.wait_for_url("**/admin/dead-letters/")

    # At a phone's width the menu still opens inside the page.
    page.set_viewport_size({"width": 390, "height": 800})
    page.locator("#admin-menu > summary").click()
    box = page.get_by_role("link", name="Notifications", exact=True).bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390


def test_a_missing_page_keeps_the_navigation(new_page, acting_user):
    page = new_page("dark")
    log_in(page, acting_user, "/")
    response = page.goto("/threads/987654/")
    assert response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    nav = page.get_by_role("navigation", name="Main")
    nav.get_by_role("link", name="Tasks", exact=True).click()
    page.wait_for_url("**/tasks/")


def test_a_child_threads_page_shows_its_runs(new_page, acting_user, source):
    thread = child_thread_story(source)
    page = new_page("light")
    log_in(page, acting_user, f"/threads/{thread.pk}/")

    rows = page.locator("#thread-runs tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text("Stopped: the provider is overloaded.")
    expect(rows.last).to_contain_text("owned: first run")
    expect(rows.last.get_by_role("link", name="Run the suite")).to_be_visible()
    steps = page.locator("#thread-timeline li")
    expect(steps).to_have_count(11)
    expect(steps.first).to_contain_text("run 1 requested (delegation)")
    expect(steps.last).to_contain_text("run 3 failed")
