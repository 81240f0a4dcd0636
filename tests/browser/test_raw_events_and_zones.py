"""The raw events behind a flag, times in the zone the operator chooses, and the
notifications button's state, in a real browser (Chromium in Asia/Kolkata, +05:30)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from playwright.sync_api import expect

from supervisor.core.models import Flag
from tests.support.browser import VIEWPORT, log_in, seed, wait_for_socket

pytestmark = pytest.mark.django_db(transaction=True)

KOLKATA = timedelta(hours=5, minutes=30)
CHILD = "thread:delegated-task:retry-port"


@pytest.fixture
def zone_page(new_page):
    """`zone_page(permissions=())`: a page whose browser lives in Asia/Kolkata."""
    return lambda permissions=(): new_page(timezone_id="Asia/Kolkata", permissions=permissions)


def no_csp_violations(page) -> None:
    assert page.evaluate("() => window.__cspViolations") == []


def kolkata_text(iso: str, minutes: bool = False) -> str:
    at = datetime.fromisoformat(iso) + KOLKATA
    return at.strftime("%Y-%m-%d %H:%M" if minutes else "%Y-%m-%d %H:%M:%S") + " +05:30"


def test_a_flags_raw_events_open_as_json(zone_page, live_app, acting_user, source):
    seeded = seed(live_app, source)
    page = zone_page()
    log_in(page, acting_user, f"/tasks/{seeded.task_pk}/")
    card = page.locator("#flags .facet-detail[open] .flag-card").first
    fold = card.locator("details.raw-events")
    expect(fold.locator(".raw-json")).to_have_count(0)  # nothing fetched before it opens
    fold.locator("summary").click()
    first = fold.locator(".raw-json").first
    expect(first).to_be_visible()
    expect(first).to_contain_text('"type": "')
    expect(first).to_contain_text('"data": {')
    expect(fold.locator(".raw-events-part").first).to_have_text("Named in the evidence")
    # Long JSON lines scroll inside their box: a phone's page stays 390 px wide.
    page.set_viewport_size({"width": 390, "height": 800})
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    page.set_viewport_size(VIEWPORT)
    # Closing and opening again does not fetch twice.
    count = fold.locator(".raw-event").count()
    fold.locator("summary").click()
    fold.locator("summary").click()
    expect(fold.locator(".raw-event")).to_have_count(count)
    no_csp_violations(page)


def test_times_in_the_browsers_zone_with_utc_on_hover_and_back(
    zone_page, live_app, acting_user, source
):
    seeded = seed(live_app, source)
    flag = Flag.objects.filter(task_id=seeded.task_pk, state=Flag.OPEN).first()
    page = zone_page()
    log_in(page, acting_user, f"/flags/{flag.pk}/events/")
    when = page.locator(".raw-event-head time").first
    iso = when.get_attribute("datetime")
    utc_words = datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S UTC")
    # UTC by default, the browser's zone on hover.
    expect(page.get_by_label("Times in")).to_have_value("utc")
    expect(when).to_have_text(utc_words)
    # The zone as the browser names it (Chromium's ICU says Asia/Calcutta).
    zone_named = re.escape(kolkata_text(iso)) + r" \(Asia/(Kolkata|Calcutta)\)"
    expect(when).to_have_attribute("title", re.compile(zone_named))

    page.get_by_label("Times in").select_option("local")  # applies at once, with script
    expect(when).to_have_text(kolkata_text(iso))
    expect(when).to_have_attribute("title", utc_words)
    no_csp_violations(page)

    page.reload()  # kept (a cookie the server reads)
    when = page.locator(".raw-event-head time").first
    expect(page.get_by_label("Times in")).to_have_value("local")
    expect(when).to_have_text(kolkata_text(iso))

    # An age carries the moment in the chosen zone on hover, then the other.
    since = page.locator("#data-as-of time[data-ago]").first
    expect(since).to_have_attribute(
        "title", re.compile(r"^\S+ \S+ \+05:30 \(Asia/\w+\) · \S+ \S+ UTC$")
    )

    page.get_by_label("Times in").select_option("utc")
    expect(when).to_have_text(utc_words)
    expect(since).to_have_attribute("title", re.compile(r"^\S+ \S+ UTC · \S+ \S+ \+05:30 \("))


def test_a_time_a_live_update_brings_is_shown_in_the_chosen_zone(
    zone_page, live_app, acting_user, source
):
    seeded = seed(live_app, source)
    page = zone_page()
    log_in(page, acting_user, f"/tasks/{seeded.task_pk}/")
    page.get_by_label("Times in").select_option("local")
    wait_for_socket(page)
    entries = page.locator("#timeline time[data-shape='time']")
    before = entries.count()
    # 23:59 UTC is 05:29 the next day in Kolkata: the entry says its local day.
    live_app.post_events(
        source.token,
        [
            {
                "id": "zones-late-run",
                "type": "run.requested",
                "at": "2026-11-05T23:59:00.250Z",
                "data": {
                    "thread": CHILD,
                    "run": f"{CHILD}:run:5",
                    "ordinal": 5,
                    "trigger": {"kind": "message"},
                },
            }
        ],
    )
    expect(entries).to_have_count(before + 1)
    expect(page.locator("#timeline").get_by_text("2026-11-06 05:29:00.250 +05:30")).to_be_visible()
    for text in entries.all_inner_texts():
        assert text.endswith("+05:30"), text
    no_csp_violations(page)


def test_the_notifications_button_says_whether_they_are_on(zone_page, live_app, acting_user):
    page = zone_page(permissions=["notifications"])
    log_in(page, acting_user, "/")
    button = page.locator("#notifications-toggle")
    expect(button).to_have_text("Notifications on")
    expect(button).to_have_attribute("aria-pressed", "true")
    button.click()
    expect(button).to_have_text("Notifications off")
    expect(button).to_have_attribute("aria-pressed", "false")
    page.reload()  # the choice is kept in this browser
    expect(button).to_have_text("Notifications off")
    button.click()
    expect(button).to_have_attribute("aria-pressed", "true")

    # Refused by the browser (headless Chromium refuses what was not granted): said so.
    other = zone_page()
    log_in(other, acting_user, "/")
    refused = other.locator("#notifications-toggle")
    expect(refused).to_have_text("Notifications blocked")
    expect(refused).to_have_attribute("aria-pressed", "false")
    expect(refused).to_be_disabled()
    no_csp_violations(page)


def test_without_script_the_zone_choice_is_a_form(browser, live_app, acting_user):
    context = browser.new_context(
        base_url=live_app.url, viewport=VIEWPORT, java_script_enabled=False
    )
    try:
        page = context.new_page()
        log_in(page, acting_user, "/audit/")
        page.get_by_label("Times in").select_option("local")
        page.get_by_role("button", name="Show").click()
        page.wait_for_url("**/audit/")
        expect(page.get_by_label("Times in")).to_have_value("local")
        assert re.search(r'data-times="local"', page.content())
    finally:
        context.close()
