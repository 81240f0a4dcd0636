"""An operator's pages for a while, in a real browser: no Content-Security-Policy
violation and no htmx error in the console, across every page an operator opens, an
action confirmed and delivered, and live frames arriving on an open page."""

import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import LATEST_TEXT, PASSWORD, page_paths, seed, wait_for_socket
from tests.support.receiver import Receiver

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "a-test-secret-of-some-length"
ADMIN_PAGES = (
    "/admin/",
    "/admin/sources/",
    "/admin/sources/new/",
    "/admin/users/new/",
    "/admin/channels/new/",
    "/admin/users/",
    "/admin/dead-letters/",
    "/admin/failures/",
    "/admin/channels/",
    "/admin/routes/",
    "/admin/routes/new/",
    "/admin/notifications/",
    "/audit/",
    "/api/v1/docs",
    "/tasks/?flag=stale_result&state=open",
)


def test_a_day_of_pages_reports_no_violation_and_no_htmx_error(
    new_page, live_app, admin_user, source
):
    page = new_page("dark")
    console = []
    page.on(
        "console",
        lambda m: m.type in ("error", "warning") and console.append(f"{page.url}: {m.text}"),
    )
    page.on("pageerror", lambda e: console.append(f"{page.url}: page error: {e}"))

    def clean(where: str) -> None:
        page.wait_for_timeout(300)
        reported = page.evaluate("() => window.__cspViolations")
        assert not reported, (where, reported)
        assert not console, (where, console)

    with Receiver(secret=SECRET) as receiver:
        source.connector = "webhook"
        source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 5}
        source.save()
        # A filtered list is open while the tasks arrive: the live rows of tasks it does
        # not show have no target on the page (htmx:oobErrorNoTarget in the console).
        page.goto("/login/?next=/tasks/%3Fq%3Dnothing-matches")
        page.get_by_label("User name").fill("admin")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url("**/tasks/?q=nothing-matches")
        wait_for_socket(page)
        seeded = seed(live_app, source)
        expect(page.locator("#favicon")).to_have_attribute("href", re.compile(r"\?n=\d+"))
        expect(page.locator("#task-rows tbody tr[id]")).to_have_count(0)
        clean("a filtered list, live")

        for name, path in page_paths(seeded).items():
            page.goto(path)
            wait_for_socket(page)
            clean(name)
        for path in ADMIN_PAGES:
            page.goto(path)
            clean(path)

        page.goto(page_paths(seeded)["detail"])
        wait_for_socket(page)
        page.locator(".problem-card .headline-action").click()
        preview = page.locator("#action-preview")
        expect(preview.locator(".sent-text")).to_contain_text(LATEST_TEXT)
        preview.get_by_label("Reason (for the audit trail)").fill("stale result handed on")
        preview.get_by_role("button", name=re.compile("Confirm")).click()
        # The outcome arrives over the socket: frames for the task, its flags and the counts.
        expect(page.locator("#action-banner")).to_contain_text("Delivery succeeded", timeout=30_000)
        assert len(receiver.deliveries) == 1
        page.wait_for_timeout(2_000)  # the frames that follow a delivery
        clean("task page after a delivery")
