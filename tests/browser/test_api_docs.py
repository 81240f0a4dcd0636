"""The API page in Chromium: Swagger UI from our static files renders every operation of
the OpenAPI document and runs one, under the site's CSP, with nothing loaded from off
the machine."""

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.support.browser import PASSWORD, SCHEMES, log_in

pytestmark = pytest.mark.django_db(transaction=True)

# Named here, so that an empty or broken document cannot pass as "every operation".
KNOWN = {"POST /api/v1/events", "GET /api/v1/tasks", "POST /api/v1/tasks/{task_id}/actions"}
LOOPBACK = {"127.0.0.1", "localhost", "[::1]"}


def favicon(message) -> bool:
    # The site has no favicon: Chromium's own request for one is a 404, on every page.
    return message.location.get("url", "").endswith("/favicon.ico")


def operation(page, method: str, path: str):
    summary = page.locator(".opblock-summary").filter(
        has=page.locator(".opblock-summary-method", has_text=re.compile(f"^{method}$"))
    )
    return summary.filter(
        has=page.locator(".opblock-summary-path", has_text=re.compile(f"^{re.escape(path)}$"))
    )


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_api_page_renders_the_operations_offline_under_the_csp(
    new_page, live_app, acting_user, scheme
):
    page = new_page(scheme)
    errors, requests = [], []
    page.on("console", lambda m: m.type == "error" and not favicon(m) and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.context.on("request", lambda r: requests.append(r.url))
    log_in(page, acting_user, "/")
    response = page.goto("/api/v1/docs")
    assert response.status == 200
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy

    expect(page.locator("#swagger-ui .info .title")).to_contain_text("Supervisor")
    document = page.request.get("/api/v1/openapi.json").json()
    operations = {f"{m.upper()} {path}" for path, ops in document["paths"].items() for m in ops}
    assert operations >= KNOWN
    for name in sorted(operations):
        method, path = name.split(" ", 1)
        expect(operation(page, method, path)).to_be_visible()
    assert page.locator("#swagger-ui .opblock").count() == len(operations)
    # Swagger UI's own dark styles follow the browser, like the site's.
    dark = page.locator("html").get_attribute("class") or ""
    assert ("dark-mode" in dark.split()) == (scheme == "dark")

    # Run one operation as the logged-in user: the session reads, the answer is shown.
    operation(page, "GET", "/api/v1/tasks").click()
    page.get_by_role("button", name="Try it out").click()
    page.get_by_role("button", name="Execute").click()
    answer = page.locator(".live-responses-table tbody tr.response")
    expect(answer.locator(".response-col_status")).to_have_text("200")
    expect(answer.locator(".response-col_description")).to_contain_text('"items"')

    page.wait_for_timeout(300)
    assert page.evaluate("() => window.__cspViolations") == []
    assert errors == []
    assert any(url.endswith("/api/v1/openapi.json") for url in requests), requests
    assert any("/api/v1/tasks" in url for url in requests), requests
    away = [url for url in requests if urlsplit(url).hostname not in LOOPBACK]
    assert not away, f"requests that left the machine: {away}"


def test_a_stranger_is_sent_to_log_in_and_lands_on_the_api_page(new_page, acting_user):
    page = new_page()
    page.goto("/api/v1/docs")
    assert page.url.endswith("/login/?next=/api/v1/docs")
    page.get_by_label("User name").fill(acting_user.get_username())
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/api/v1/docs")
    expect(operation(page, "GET", "/api/v1/tasks")).to_be_visible()


def test_try_it_out_posts_with_the_session_and_its_csrf_token(new_page, acting_user):
    page = new_page()
    log_in(page, acting_user, "/api/v1/docs")
    operation(page, "POST", "/api/v1/actions/bulk").click()
    page.get_by_role("button", name="Try it out").click()
    page.locator("textarea.body-param__text").fill(
        '{"kind": "continue", "filter": {"q": "no-such-task"}}'
    )
    page.get_by_role("button", name="Execute").click()
    # Without the X-CSRFToken header the session's POST would be 403 (CSRF check failed).
    answer = page.locator(".live-responses-table tbody tr.response")
    expect(answer.locator(".response-col_status")).to_have_text("200")
    expect(answer.locator(".response-col_description")).to_contain_text('"count": 0')
