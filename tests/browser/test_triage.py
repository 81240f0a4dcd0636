"""Triage in a real browser: the open count in the title and on the tab's icon, one
problem per task, ages, and pages that fit a phone."""

import re

import pytest
from playwright.sync_api import expect

from supervisor.core.models import Flag
from tests.support.browser import log_in, seed, wait_for_socket

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}


def test_acknowledging_every_open_problem_brings_the_title_and_icon_to_zero(
    new_page, live_app, acting_user, source
):
    seeded = seed(live_app, source)
    page = new_page("light")
    log_in(page, acting_user, f"/tasks/{seeded.task_pk}/")
    wait_for_socket(page)
    count = seeded.open_flags
    expect(page).to_have_title(re.compile(rf"^\({count}\) "))
    expect(page.locator("#favicon")).to_have_attribute("href", f"/favicon.svg?n={count}")
    card = page.locator("#flags .problem-card")
    expect(card).to_have_count(1)
    expect(card.get_by_role("heading", level=2)).to_contain_text("Stale result handed on")
    for _ in range(count):
        facet = page.locator(
            "#flags details.facet-detail",
            has=page.get_by_role("button", name="Acknowledge", exact=True, include_hidden=True),
        ).first
        if facet.get_attribute("open") is None:
            facet.locator("summary").first.click()
        facet.locator("details.flag-own-actions > summary").first.click()
        facet.get_by_role("button", name="Acknowledge", exact=True).first.click()
        expect(page.locator("#messages")).to_contain_text("Acknowledged")
        count -= 1
        expect(page.locator("#favicon")).to_have_attribute(
            "href", "/favicon.svg" + (f"?n={count}" if count else "")
        )
    expect(page).to_have_title(re.compile(r"^Port the retry loop · Supervisor$"))
    # Said to screen readers too, from a live region that outlives the swaps.
    expect(page.locator("#open-count-words")).to_have_text("No open problem awaits attention.")
    assert not Flag.objects.filter(state=Flag.OPEN, acknowledged_at__isnull=True).exists()
    expect(card).to_contain_text("Taken up")
    # The icon the tab now shows has no badge.
    icon = page.request.get(live_app.url + "/favicon.svg").text()
    assert "<svg" in icon and "<text" not in icon


def test_the_overview_list_and_task_page_fit_a_phone(new_page, live_app, acting_user, source):
    seeded = seed(live_app, source)
    page = new_page("dark")
    page.set_viewport_size(PHONE)
    log_in(page, acting_user, "/")
    for path in ("/", "/tasks/", f"/tasks/{seeded.task_pk}/"):
        page.goto(path)
        expect(page.locator("main h1, main h2").first).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        # What sticks out, named in the failure.
        wide = page.evaluate(
            "Array.from(document.querySelectorAll('main *')).filter(e => "
            "e.getBoundingClientRect().right > innerWidth + 1).slice(0, 5).map(e => "
            "e.tagName + '.' + e.className)"
        )
        assert width <= PHONE["width"], f"{path} is {width} px wide at 390 px: {wide}"
    # The list's row is one card: the problem in words, severity first.
    page.goto("/tasks/")
    row = page.locator("#task-rows tr.task-row", has_text="Port the retry loop")
    expect(row.locator(".problem .severity")).to_have_text("critical")
    expect(row.locator(".problem .flag")).to_have_text("Stale result handed on")


def test_ages_and_data_as_of_read_as_words_with_utc_on_hover(
    new_page, live_app, acting_user, source
):
    seed(live_app, source)
    page = new_page("light")
    log_in(page, acting_user, "/tasks/")
    as_of = page.locator("#data-as-of")
    expect(as_of).to_contain_text(re.compile(r"Data as of \d+ (s|min) ago"))
    expect(as_of.locator("time").first).to_have_attribute("title", re.compile(r" UTC$"))
    delegated = page.locator("#task-rows tr.task-row td[data-label=Delegated] time").first
    expect(delegated).to_have_text(re.compile(r" ago$"))
    # A short id, the full one on hover and one click from the clipboard.
    row = page.locator("#task-rows tr.task-row", has_text="Port the retry loop")
    task_id = row.locator("code.id")
    expect(task_id).to_have_text("retry-port")
    expect(task_id).to_have_attribute("title", re.compile(r"^node:delegated-task:"))
    expect(row.locator("button.copy")).to_be_visible()
