"""axe-core in the browser on every page, light and dark: no serious or critical
violation (colour contrast included).

axe-core is vendored under tests/browser/vendor/axe-core (test-only, never served) and
injected with Playwright; the context bypasses the CSP for that one inline script.
"""

import pytest
from playwright.sync_api import expect

from tests.support.browser import (
    AXE,
    BLOCKING,
    RUN_AXE,
    SCHEMES,
    describe,
    log_in,
    page_paths,
    seed,
    wait_for_socket,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_no_serious_accessibility_violations(new_page, live_app, acting_user, source, scheme):
    seeded = seed(live_app, source)
    page = new_page(scheme, bypass_csp=True)
    log_in(page, acting_user, "/")
    found = []
    for name, path in page_paths(seeded).items():
        page.goto(path)
        expect(page.locator("[data-live-main]")).to_be_visible()
        wait_for_socket(page)
        page.add_script_tag(path=AXE)
        violations = page.evaluate(RUN_AXE)
        found += describe(name, scheme, [v for v in violations if v["impact"] in BLOCKING])
    assert not found, "axe found serious or critical violations:\n" + "\n".join(found)
