"""An operator's day, after an action, in a real browser: the
transient-failure task ends with the parent holding the child's real answer in two
clicks, its flags resolved saying by whom; a finished task never has Cancel as its main
action."""

import re

import pytest
from playwright.sync_api import expect

from supervisor.core.models import Flag, Task
from tests.support.browser import log_in, wait_for_socket
from tests.support.receiver import Receiver
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario
from tests.support.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "a-test-secret-of-some-length"
SEED002 = load_scenario(next(p for p in CONTRACT_SCENARIOS if p.name.startswith("seed002")))
TRANSIENT = "node:delegated-task:cmd%3Aa1"
DUPLICATE = "node:delegated-task:cmd%3Aa2"
REAL_ANSWER = "Reviewed and fixed the codemode change: 3 files changed"
FAILURE_FLAGS = {"failed_while_running", "transient_failure"}


def open_kinds(task_id: str) -> set[str]:
    return set(
        Flag.objects.filter(subject_id=task_id, state=Flag.OPEN).values_list("kind", flat=True)
    )


def post(live_app, source, events, task_id, expected) -> Task:
    answer = live_app.post_events(source.token, events)
    assert answer["accepted"] == len(events), answer
    wait_for(lambda: expected <= open_kinds(task_id), what=f"{sorted(expected)} to open")
    return Task.objects.get(task_id=task_id)


def test_the_parent_gets_the_childs_real_answer_in_two_clicks(
    new_page, live_app, acting_user, source
):
    with Receiver(secret=SECRET) as receiver:
        source.connector = "webhook"
        source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 5}
        source.save()
        # Seed 002 until the child's run 2 has finished with the real answer, which no
        # wake has brought to the parent yet: the task is still reported failed (403).
        task = post(live_app, source, SEED002["events"][:11], TRANSIENT, FAILURE_FLAGS)

        page = new_page("light")
        log_in(page, acting_user, f"/tasks/{task.pk}/")
        wait_for_socket(page)
        page.evaluate("window.__notReloaded = 'the task page'")
        main = page.locator(".suggested-action").first
        expect(main).to_contain_text("Reported failed, child went on, Failed on a passing fault")
        main.get_by_role("link", name=re.compile("Deliver the child’s later result")).click()

        preview = page.locator("#action-preview")
        expect(preview.locator(".sent-text")).to_contain_text(REAL_ANSWER)
        expect(preview.locator("ul.answers")).to_contain_text("Failed on a passing fault")
        expect(preview.locator("ul.stays-open")).to_have_count(0)
        preview.get_by_role("button", name=re.compile("Confirm")).click()

        banner = page.locator("#action-banner")
        expect(banner).to_contain_text("Delivery succeeded", timeout=30_000)
        flags = page.locator("#flags")
        for kind in sorted(FAILURE_FLAGS):
            card = flags.locator(".flag-card", has=page.locator("code.flag-kind", has_text=kind))
            expect(card).to_have_class(re.compile(r"\bflag-resolved\b"))
            expect(card).to_contain_text("Resolved by the delivery by hand of run")
        expect(page.locator("#results .card.given")).to_contain_text(REAL_ANSWER)
        expect(page.locator("#timeline li.delivery")).to_have_count(1)
        assert page.evaluate("window.__notReloaded") == "the task page"
        [sent] = receiver.deliveries
        assert REAL_ANSWER in sent["action"]["text"]
        assert not open_kinds(TRANSIENT) & FAILURE_FLAGS


def test_a_finished_task_never_has_cancel_as_its_main_action(
    new_page, live_app, acting_user, source
):
    source.connector = "simulator"
    source.save()
    task = post(live_app, source, SEED002["events"], DUPLICATE, {"duplicate_delegation"})
    page = new_page("light")
    log_in(page, acting_user, f"/tasks/{task.pk}/")
    actions = page.locator("#actions")
    expect(actions.locator(".suggested-action")).to_contain_text("Cancel the task: not now")
    expect(actions.locator(".suggested-action a.primary")).to_have_count(0)
    expect(actions.get_by_text("the task has finished (completed)")).to_be_visible()
