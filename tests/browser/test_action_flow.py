"""An operator delivers a missed result from the task page in a real browser: the
suggested action, its preview, the confirmation, and the outcome arriving live while a
real worker sends it to a webhook receiver on loopback."""

import re

import pytest
from playwright.sync_api import expect

from supervisor.core.models import Action, Task
from tests.receiver import Receiver
from tests.workers import wait_for

from .conftest import LATEST_TEXT, RETRY_PORT, log_in, open_kinds, seed, wait_for_socket

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "a-test-secret-of-some-length"


def test_deliver_from_the_task_page_with_preview_and_a_live_outcome(
    new_page, live_app, acting_user, source
):
    with Receiver(secret=SECRET) as receiver:
        source.connector = "webhook"
        source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 5}
        source.save()
        seed(live_app, source)
        task = Task.objects.get(task_id=RETRY_PORT)

        page = new_page("light")
        log_in(page, acting_user, f"/tasks/{task.pk}/")
        wait_for_socket(page)
        page.evaluate("window.__notReloaded = 'the task page'")
        suggested = page.locator(".suggested-action")
        expect(suggested).to_have_count(1)
        expect(suggested).to_contain_text("Stale result handed on")
        suggested.get_by_role("link", name=re.compile("Deliver the latest result")).click()

        preview = page.locator("#action-preview")
        expect(preview.get_by_role("heading", name=re.compile("preview"))).to_be_visible()
        expect(preview.locator(".sent-text")).to_contain_text(LATEST_TEXT)
        expect(preview.locator(".sent-text")).to_contain_text("delivered by hand via Supervisor")
        expect(preview).to_contain_text("thread:parent-release")
        preview.get_by_label("Reason (for the audit trail)").fill("stale result handed on")
        preview.get_by_role("button", name=re.compile("Confirm")).click()

        # The banner follows the action: queued, sending, then succeeded (live).
        expect(page.locator("#action-banner")).to_contain_text("Delivery")
        # Focus goes to it, not to the page body, with the Confirm button gone.
        expect(page.locator("#action-banner")).to_be_focused()
        action = Action.objects.get()
        row = page.locator(f"#action-{action.pk}")
        # The worker sends it; the row turns succeeded over the socket, without a reload.
        expect(row.locator(".action-state")).to_have_text("succeeded", timeout=30_000)
        expect(page.locator("#action-banner")).to_contain_text("Delivery succeeded")
        expect(page.locator("#action-banner")).to_be_focused()  # still, after live frames
        expect(page.locator("#action-banner")).not_to_contain_text("queued")
        expect(row).to_contain_text("recorded as a manual wake")
        assert page.evaluate("window.__notReloaded") == "the task page"
        expect(page.locator("#results .card.latest")).to_contain_text("it has reached the parent")
        assert len(receiver.deliveries) == 1
        assert receiver.deliveries[0]["action"]["text"].endswith(LATEST_TEXT)
        # The recorded manual wake is judged by the worker's next evaluation, after the
        # page already shows the action succeeded.
        wait_for(
            lambda: not open_kinds() & {"stale_result", "undelivered_result"},
            what="the delivery flags to resolve",
        )
