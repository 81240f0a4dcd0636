"""One reading of what the parent holds, in a real browser:
on a task flagged "Result never delivered" both panels say the result has not reached the
parent, as the flag does; after an operator delivers the child's later run by hand, "the
latest result" is that run, it has reached the parent, and the only "What changed" is
the stale text the parent had before (the delivery's header is no change)."""

import re

import pytest
from playwright.sync_api import expect

from supervisor.core.models import Flag, Task
from tests.support.browser import log_in, wait_for_socket
from tests.support.receiver import Receiver
from tests.support.scenarios import CONTRACT_SCENARIOS, OWN_SCENARIOS, load_scenario
from tests.support.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "a-test-secret-of-some-length"
NEVER = load_scenario(next(p for p in OWN_SCENARIOS if p.name == "never-delivered.json"))
SEED002 = load_scenario(next(p for p in CONTRACT_SCENARIOS if p.name.startswith("seed002")))
TRANSIENT = "node:delegated-task:cmd%3Aa1"
FAILURE = "Failed to authenticate. API Error: 403"
REAL_ANSWER = "Reviewed and fixed the codemode change: 3 files changed"


def open_kinds(task_id: str) -> set[str]:
    return set(
        Flag.objects.filter(subject_id=task_id, state=Flag.OPEN).values_list("kind", flat=True)
    )


def post(live_app, source, events, task_id, expected) -> Task:
    answer = live_app.post_events(source.token, events)
    assert answer["accepted"] == len(events), answer
    wait_for(lambda: expected <= open_kinds(task_id), what=f"{sorted(expected)} to open")
    return Task.objects.get(task_id=task_id)


def test_both_panels_agree_with_a_never_delivered_flag(new_page, live_app, acting_user, source):
    task = post(live_app, source, NEVER["events"], "task:nd", {"never_delivered"})
    page = new_page("light")
    log_in(page, acting_user, f"/tasks/{task.pk}/")
    expect(page.locator("#flags")).to_contain_text("Result never delivered")
    given = page.locator("#results .card.given")
    latest = page.locator("#results .card.latest")
    expect(latest).to_contain_text("Lint clean: 0 findings in src/.")
    expect(latest).to_contain_text("it has not reached the parent")
    expect(given).to_contain_text("Nothing has reached the parent yet")
    expect(given).not_to_contain_text("same as the latest result")
    expect(given.locator(".not-given").first).to_contain_text("not delivered")


def test_a_later_run_delivered_by_hand_becomes_the_latest_result_with_one_diff(
    new_page, live_app, acting_user, source
):
    with Receiver(secret=SECRET) as receiver:
        source.connector = "webhook"
        source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 5}
        source.save()
        # Seed 002 until the child's run 2 (not the task's own: a message started it) has
        # finished with the real answer; the parent holds only the 403 failure.
        task = post(live_app, source, SEED002["events"][:11], TRANSIENT, {"transient_failure"})
        page = new_page("light")
        log_in(page, acting_user, f"/tasks/{task.pk}/")
        wait_for_socket(page)
        latest = page.locator("#results .card.latest")
        expect(latest).to_contain_text(FAILURE)
        page.locator(".suggested-action").first.get_by_role(
            "link", name=re.compile("Deliver the child’s later result")
        ).click()
        preview = page.locator("#action-preview")
        expect(preview.locator(".sent-text")).to_contain_text(REAL_ANSWER)
        preview.get_by_role("button", name=re.compile("Confirm")).click()
        expect(page.locator("#action-banner")).to_contain_text("Delivery succeeded", timeout=30_000)
        assert len(receiver.deliveries) == 1

        # The latest result is the run delivered by hand, and it has reached the parent.
        expect(latest).to_contain_text(REAL_ANSWER, timeout=15_000)
        expect(latest).not_to_contain_text(FAILURE)
        expect(latest).to_contain_text("it has reached the parent")
        given = page.locator("#results .card.given")
        expect(given).to_contain_text("same as the latest result")
        # One diff: from the failure the parent was given first to the latest result; the
        # delivery by hand is the same text, its header no change.
        diffs = page.locator("#results .card.diff")
        expect(diffs).to_have_count(1)
        expect(diffs.locator(".word-diff")).not_to_contain_text("by hand")
        expect(diffs.locator(".word-diff del")).to_contain_text("API Error")
