"""In a real browser, an operator continues a task left by a restart
(stuck) from its page; a real worker sends the continue to a webhook receiver on
loopback; the orchestrator's run for it names the continue's manual wake, so the task
owns it; the page then shows, live, what the continued run did and what is left to do
(deliver its result), and after the delivery, that nothing is left."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from supervisor.core.models import Action, Task
from tests.support.browser import log_in, open_kinds, wait_for_socket
from tests.support.receiver import Receiver
from tests.support.scenarios import OWN_SCENARIOS, load_scenario
from tests.support.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "a-test-secret-of-some-length"
LEFT = load_scenario(next(p for p in OWN_SCENARIOS if p.name == "left-by-restart.json"))
TASK, CHILD = "task:lr", "thread:lr-child"
DONE = "Watched the deploy to the end: staging is healthy."


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def continued_run(wake: str) -> list[dict]:
    """The child's run for the continue, as the orchestrator reports it, ended."""
    now = datetime.now(UTC)
    run = f"{CHILD}~2"
    return [
        {
            "id": "lr-cont-1",
            "type": "run.requested",
            "at": stamp(now - timedelta(seconds=3)),
            "data": {
                "thread": CHILD,
                "run": run,
                "ordinal": 2,
                "trigger": {"kind": "wake", "wake": wake},
            },
        },
        {
            "id": "lr-cont-2",
            "type": "run.started",
            "at": stamp(now - timedelta(seconds=2)),
            "data": {"thread": CHILD, "run": run},
        },
        {
            "id": "lr-cont-3",
            "type": "run.finished",
            "at": stamp(now - timedelta(seconds=1)),
            "data": {"thread": CHILD, "run": run, "status": "completed", "summary": DONE},
        },
    ]


def test_continue_a_stuck_task_and_see_what_the_continued_run_left_to_do(
    new_page, live_app, acting_user, source
):
    with Receiver(secret=SECRET) as receiver:
        source.connector = "webhook"
        source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 5}
        source.save()
        answer = live_app.post_events(source.token, LEFT["events"])
        assert answer["accepted"] == len(LEFT["events"]), answer
        # Weeks ago by the real clock: left by the restart, and stuck.
        wait_for(lambda: open_kinds(TASK) == {"left_by_restart", "stuck"}, what="the flags")
        task = Task.objects.get(task_id=TASK)

        page = new_page("dark")
        log_in(page, acting_user, f"/tasks/{task.pk}/")
        wait_for_socket(page)
        page.evaluate("window.__notReloaded = 'the task page'")
        suggested = page.locator(".suggested-action")
        expect(suggested).to_have_count(1)
        suggested.get_by_role("link", name=re.compile("Continue the child")).click()
        preview = page.locator("#action-preview")
        preview.get_by_label("Reason (for the audit trail)").fill("left by a restart")
        preview.get_by_role("button", name=re.compile("Confirm")).click()

        action = wait_for(lambda: Action.objects.filter(kind="continue").first(), what="it")
        row = page.locator(f"#action-{action.pk}")
        expect(row.locator(".action-state")).to_have_text("succeeded", timeout=30_000)
        outcome = page.locator("#continued-outcome")
        expect(outcome).to_contain_text("has not started a run for the continue yet")

        [sent] = receiver.deliveries
        assert sent["action"]["kind"] == "continue" and sent["action"]["thread_id"] == CHILD
        answer = live_app.post_events(source.token, continued_run(sent["action"]["wake"]))
        assert answer["accepted"] == 3, answer

        # Live, without a reload: the run is the task's own, and its result is left to deliver.
        expect(outcome).to_contain_text("Run 2 (the task’s own) finished completed", timeout=30_000)
        expect(outcome).to_contain_text(DONE)
        expect(outcome).to_contain_text("Left to do: deliver its result to the parent")
        expect(outcome).not_to_contain_text(CHILD)
        wait_for(lambda: not open_kinds(TASK), what="stuck and left_by_restart to resolve")
        deliver = page.get_by_role("link", name=re.compile("Deliver the continued run’s result"))
        expect(deliver).to_contain_text("(run 2)")
        expect(page.locator("#actions")).not_to_contain_text("No open flag calls for an action")
        assert page.evaluate("window.__notReloaded") == "the task page"

        deliver.click()
        expect(preview.locator(".sent-text")).to_contain_text(DONE)
        preview.get_by_label("Reason (for the audit trail)").fill("the continued run's result")
        preview.get_by_role("button", name=re.compile("Confirm")).click()
        expect(outcome).to_contain_text(
            "Left to do: nothing: its result has reached the parent", timeout=30_000
        )
        assert len(receiver.deliveries) == 2
        assert receiver.deliveries[1]["action"]["text"].endswith(DONE)
