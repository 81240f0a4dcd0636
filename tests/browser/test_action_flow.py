"""An operator delivers a missed result from the task page in a real browser: the
suggested action, its preview, the confirmation, and the outcome arriving live while a
real worker sends it to a webhook receiver on loopback."""

import re

import pytest
from playwright.sync_api import expect

from supervisor.core.models import Action, Task
from tests.support.browser import LATEST_TEXT, RETRY_PORT, log_in, open_kinds, seed, wait_for_socket
from tests.support.receiver import Receiver
from tests.support.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "a-test-secret-of-some-length"


@pytest.fixture
def webhook(source):
    """The source acts through a webhook receiver on loopback."""
    with Receiver(secret=SECRET) as receiver:
        source.connector = "webhook"
        source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 5}
        source.save()
        yield receiver


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


def test_a_confirm_refused_because_the_preview_changed_keeps_focus_on_the_new_preview(
    new_page, live_app, acting_user, source, webhook
):
    seed(live_app, source)
    task = Task.objects.get(task_id=RETRY_PORT)
    page = new_page("light")
    log_in(page, acting_user, f"/tasks/{task.pk}/")
    wait_for_socket(page)
    suggested = page.locator(".suggested-action")
    suggested.get_by_role("link", name=re.compile("Deliver the latest result")).click()
    preview = page.locator("#action-preview")
    expect(preview.locator(".sent-text")).to_contain_text(LATEST_TEXT)
    preview.get_by_label("Reason (for the audit trail)").fill("stale result handed on")
    # The child's last run is reported again with another text after the preview.
    amended = "All checks green after a re-run. PR #812 is NOT ready: CI is red."
    answer = live_app.post_events(
        source.token,
        [
            {
                "id": "amended-run-4",
                "type": "run.finished",
                "at": "2026-11-05T23:05:00Z",
                "data": {
                    "thread": "thread:delegated-task:retry-port",
                    "run": "thread:delegated-task:retry-port:run:4",
                    "status": "completed",
                    "summary": amended,
                },
            }
        ],
    )
    assert answer["accepted"] == 1, answer
    preview.get_by_role("button", name=re.compile("Confirm")).click()

    expect(page.get_by_text("Nothing was sent")).to_be_visible()
    expect(page.locator(".sent-text")).to_contain_text(amended)
    # Focus is on the new preview, where the operator reads what changed: not on the
    # Actions heading far above it, and not on the page body.
    expect(page.locator("#preview-h")).to_be_focused()
    assert not Action.objects.exists() and webhook.attempts == 0
