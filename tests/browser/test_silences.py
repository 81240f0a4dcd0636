"""Silences in a real browser: an operator silences a task's kinds of flag from the
Silences page; the task leaves "Tasks needing action", the counts drop (on a second
overview too, live, without a reload) and the task page says which silence holds it
until when; ending the silence brings it all back."""

import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from supervisor.core import clock
from supervisor.core.flags.kinds import kind_of
from supervisor.core.models import Flag
from supervisor.core.triage.silences import do_create_silence
from tests.support.browser import (
    AXE,
    BLOCKING,
    EXPECTED_OPEN,
    RUN_AXE,
    SCHEMES,
    describe,
    log_in,
    seed,
    wait_for_socket,
)

pytestmark = pytest.mark.django_db(transaction=True)

REASON = "Checks are flaky until the runner fix lands"
PHONE = {"width": 390, "height": 844}


def test_a_silence_quiets_a_tasks_flags_and_ending_it_brings_them_back(
    new_page, live_app, acting_user, source
):
    seeded = seed(live_app, source)
    count = seeded.open_flags
    watching = new_page("dark")
    log_in(watching, acting_user, "/")
    wait_for_socket(watching)
    needing = watching.locator("#overview-tasks")
    expect(needing).to_contain_text("Port the retry loop")
    expect(watching.locator("#favicon")).to_have_attribute("href", f"/favicon.svg?n={count}")

    page = new_page("light")
    log_in(page, acting_user, "/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Silences").click()
    page.wait_for_url("**/silences/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Silences")
    for kind in sorted(EXPECTED_OPEN):
        page.get_by_label(kind_of(kind).title, exact=True).check()
    page.get_by_label("Reason").fill(REASON)
    page.get_by_label("Silence for").select_option("24h")
    page.get_by_role("button", name="Create silence").click()
    expect(page.locator("#messages")).to_contain_text("Created silence #")
    active = page.get_by_role("table", name=re.compile("^Active silences"))
    expect(active).to_contain_text(REASON)

    # The other tab's overview follows, live: the task needs no action, nothing counts.
    expect(watching.locator("#favicon")).to_have_attribute("href", "/favicon.svg")
    expect(needing).not_to_contain_text("Port the retry loop")
    expect(watching.locator("#overview-counts")).to_contain_text(
        f"0 open flags awaiting attention and {count} taken up"
    )
    expect(watching.locator("#overview-later")).to_contain_text("Silenced by")
    assert Flag.objects.filter(state=Flag.OPEN).count() == count  # still open: quiet

    page.goto(f"/tasks/{seeded.task_pk}/")
    flags = page.locator("#flags")
    expect(flags).to_contain_text(
        "Taken up: every flag of it is acknowledged, snoozed or silenced."
    )
    held = flags.get_by_role("link", name=REASON).first
    expect(held).to_be_visible()
    expect(flags.locator(".silenced").first).to_contain_text(re.compile(r"until \d{4}-\d\d-\d\d"))

    # Ended early: every count is back, and the task needs action again; a task page
    # left open follows, live.
    watching.goto(f"/tasks/{seeded.task_pk}/")
    wait_for_socket(watching)
    expect(watching.locator("#flags")).to_contain_text("Silenced by")
    held.click()
    page.wait_for_url("**/silences/*/")
    silence_pk = int(page.url.rstrip("/").rsplit("/", 1)[1])
    page.get_by_role("button", name="End this silence now").click()
    expect(page.locator("#messages")).to_contain_text("its flags need action again")
    expect(page.get_by_role("table", name=re.compile("^Silences that ended"))).to_contain_text(
        "ended early by operator"
    )
    expect(watching.locator("#flags")).not_to_contain_text("Silenced by")
    expect(watching.locator("#favicon")).to_have_attribute("href", f"/favicon.svg?n={count}")
    page.goto("/")
    expect(page.locator("#overview-tasks")).to_contain_text("Port the retry loop")

    # The list, a silence's page and the form fit a phone, in dark mode too.
    for shown in (page, watching):
        shown.set_viewport_size(PHONE)
        for path in ("/silences/", f"/silences/{silence_pk}/"):
            shown.goto(path)
            expect(shown.locator("main h1")).to_be_visible()
            assert shown.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], path


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_silences_pages_have_no_serious_accessibility_violations(
    new_page, live_app, acting_user, scheme
):
    now = clock.now()
    made = do_create_silence(
        kinds=["stuck"],
        title_words=["retry"],
        reason=REASON,
        ends_at=now + timedelta(hours=1),
        now=now,
    )
    page = new_page(scheme, bypass_csp=True)
    log_in(page, acting_user, "/silences/")
    found = []
    for name, path in (("list", "/silences/"), ("silence", f"/silences/{made.pk}/")):
        page.goto(path)
        found += axe(page, name, scheme)
    # A form sent back with its errors: each beside its field, and still accessible.
    page.goto("/silences/")
    page.get_by_role("button", name="Create silence").click()
    expect(page.locator(".has-errors").first).to_contain_text("Reason: say why")
    found += axe(page, "form with errors", scheme)
    assert not found, "axe found serious or critical violations:\n" + "\n".join(found)


def axe(page, name: str, scheme: str) -> list[str]:
    page.add_script_tag(path=AXE)
    violations = page.evaluate(RUN_AXE)
    return describe(name, scheme, [v for v in violations if v["impact"] in BLOCKING])
