"""Snoozes and acknowledgements taken back, and a snooze until a chosen time, in a real
browser: the chosen time is typed in the snooze's disclosure,
and a flag card's own forms take each back."""

import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from supervisor.core import clock
from supervisor.core.models import Flag
from tests.support.browser import RETRY_PORT, log_in, seed, wait_for_socket

pytestmark = pytest.mark.django_db(transaction=True)


def open_own_forms(page, card) -> None:
    """Open the card's facet (a taken-up kind folds away) and its own forms."""
    facet = page.locator("#flags details.facet-detail", has=card)
    if facet.get_attribute("open") is None:
        facet.locator("summary").first.click()
    card.locator("details.flag-own-actions > summary").click()


def test_snooze_until_a_chosen_time_then_take_it_back(new_page, live_app, acting_user, source):
    seeded = seed(live_app, source)
    page = new_page("light")
    log_in(page, acting_user, f"/tasks/{seeded.task_pk}/")
    wait_for_socket(page)

    until = (clock.now() + timedelta(days=2)).replace(second=0, microsecond=0)
    actions = page.locator(".problem-actions")
    actions.locator("details.snooze-until > summary").click()
    actions.get_by_label("Until (UTC)").fill(until.strftime("%Y-%m-%dT%H:%M"))
    actions.get_by_role("button", name="Snooze").click()
    expect(page.locator("#messages")).to_contain_text("Snoozed")
    snoozed = Flag.objects.filter(subject_id=RETRY_PORT, state=Flag.OPEN)
    assert {f.snoozed_until for f in snoozed} == {until}  # the typed time, not "1 hour"
    expect(page.locator(".problem-card")).to_have_class(re.compile(r"\bis-taken-up\b"))

    card = page.locator("#" + page.locator("#flags .flag-card").first.get_attribute("id"))
    open_own_forms(page, card)
    card.get_by_role("button", name="Un-snooze").click()
    expect(page.locator("#messages")).to_contain_text("snooze")
    expect(card.locator(".flag-when")).not_to_contain_text("snoozed until")


def test_acknowledge_a_flag_then_take_it_back(new_page, live_app, acting_user, source):
    seeded = seed(live_app, source)
    page = new_page("dark")
    log_in(page, acting_user, f"/tasks/{seeded.task_pk}/")
    wait_for_socket(page)

    card_id = page.locator("#flags .facet-detail[open] .flag-card").first.get_attribute("id")
    card = page.locator(f"#{card_id}")
    open_own_forms(page, card)
    card.get_by_role("button", name="Acknowledge", exact=True).click()
    expect(card.locator(".flag-when")).to_contain_text("acknowledged")
    flag = Flag.objects.get(pk=int(card_id.rsplit("-", 1)[1]))
    assert flag.acknowledged_at is not None

    open_own_forms(page, card)
    card.get_by_role("button", name="Un-acknowledge").click()
    expect(card.locator(".flag-when")).not_to_contain_text("acknowledged")
    flag.refresh_from_db()
    assert flag.acknowledged_at is None
