"""The pages work under the Content-Security-Policy they send: no violation is reported
while they load, go live and swap what the socket and htmx bring."""

import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import log_in, page_paths, seed, wait_for_socket

pytestmark = pytest.mark.django_db(transaction=True)


def test_no_content_security_policy_errors(new_page, live_app, acting_user, source):
    page = new_page("light")
    errors = []
    page.on(
        "console",
        lambda m: m.type == "error" and "Content Security Policy" in m.text and errors.append(m),
    )
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    response = page.goto("/login/")
    assert "script-src 'self'" in response.headers.get("content-security-policy", "")
    log_in(page, acting_user, "/tasks/")
    wait_for_socket(page)
    seeded = seed(live_app, source)  # live frames swap into the open list
    expect(page.locator("#task-rows")).to_be_visible()
    for name, path in page_paths(seeded).items():
        response = page.goto(path)
        policy = response.headers.get("content-security-policy", "")
        assert re.search(r"default-src 'self'", policy), (name, policy)
        expect(page.locator("[data-live-main]")).to_be_visible()
        wait_for_socket(page)
        if name == "detail":  # an htmx form post and swap
            page.get_by_role("button", name="Acknowledge").first.click()
            expect(page.locator("#messages")).to_contain_text("Acknowledged")
        page.wait_for_timeout(300)
        reported = page.evaluate("() => window.__cspViolations")
        assert not reported, (name, reported)
        assert not errors, (name, [getattr(e, "text", e) for e in errors])
