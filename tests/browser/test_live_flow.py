"""An operator's session in a real browser against the real app (daphne + Celery).

seed000 is posted in two parts: everything but the report that finalizes the task on a
stale text (event s000-0015), then that report while the operator watches the list. The
finalization opens premature_completion and undelivered_result, which must show up on
the open page without a reload.
"""

import re

import pytest
from playwright.sync_api import expect

from supervisor.core.models import Flag
from tests.support.browser import (
    EXPECTED_OPEN,
    GIVEN_TEXT,
    LATEST_TEXT,
    RETRY_PORT,
    SEED000,
    log_in,
    open_kinds,
    wait_for_socket,
)
from tests.support.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

EVENTS = SEED000["events"]
FINALIZE = next(
    i
    for i, e in enumerate(EVENTS)
    if e["type"] == "task.reported"
    and e["data"]["task"] == RETRY_PORT
    and e["data"]["status"] == "completed"
)
BEFORE_FINALIZE = EVENTS[:FINALIZE] + EVENTS[FINALIZE + 1 :]
NEWLY_OPEN = {"premature_completion", "undelivered_result"}


def test_a_flag_appears_live_and_can_be_acknowledged(new_page, live_app, acting_user, source):
    assert live_app.post_events(source.token, BEFORE_FINALIZE)["accepted"] == len(BEFORE_FINALIZE)
    wait_for(lambda: "stale_result" in open_kinds(), what="the first evaluation")
    assert not open_kinds() & NEWLY_OPEN

    page = new_page("light")
    navigations = []
    page.on("framenavigated", lambda frame: frame == page.main_frame and navigations.append(1))
    log_in(page, acting_user, "/tasks/")
    row = page.locator("#task-rows tr.task-row", has_text="Port the retry loop")
    expect(row).to_have_count(1)
    wait_for_socket(page)
    for kind in NEWLY_OPEN:
        expect(row.locator(f'[title="flag kind: {kind}"]')).to_have_count(0)
    # While connected, the "connection down" banner is not shown.
    expect(page.locator("#connection-status")).to_be_empty()
    page.evaluate("window.__notReloaded = 'still the same document'")
    loads = len(navigations)

    answer = live_app.post_events(source.token, [EVENTS[FINALIZE]])
    assert answer["accepted"] == 1, answer

    # The task's flags are one problem: its kinds in words, each code on hover.
    for kind in sorted(EXPECTED_OPEN):
        expect(row.locator(f'[title="flag kind: {kind}"]')).to_have_count(1, timeout=30_000)
    expect(row.locator(".problem [title^='flag kind: ']")).to_have_count(len(EXPECTED_OPEN))
    expect(row.locator(".problem .flag")).to_have_text("Stale result handed on")
    expect(row.locator(".status")).to_have_text("completed")
    # No reload, no navigation: the row came over the socket.
    assert page.evaluate("window.__notReloaded") == "still the same document"
    assert len(navigations) == loads
    # The open-flag count is in the tab title.
    wait_for(lambda: open_kinds() == EXPECTED_OPEN, what="the flags to settle")
    count = Flag.objects.filter(state=Flag.OPEN).count()
    expect(page).to_have_title(re.compile(rf"^\({count}\) Tasks · Supervisor$"))
    expect(page.locator("#connection-status")).to_be_empty()

    row.get_by_role("link", name="Port the retry loop").click()
    page.wait_for_url(re.compile(r"/tasks/\d+/$"))
    given = page.locator("#results .card.given")
    latest = page.locator("#results .card.latest")
    expect(given.get_by_role("heading")).to_have_text("What the parent was given")
    expect(given.locator("blockquote")).to_have_text(GIVEN_TEXT)
    expect(latest.get_by_role("heading")).to_have_text("The latest result")
    expect(latest.locator("blockquote")).to_have_text(LATEST_TEXT)
    expect(page).to_have_title(re.compile(rf"^\({count}\) Port the retry loop · Supervisor$"))

    stale = Flag.objects.get(subject_id=RETRY_PORT, kind="stale_result", state=Flag.OPEN)
    assert stale.evidence.get("text"), stale.evidence
    card = page.locator(f"#flag-card-{stale.pk}")
    expect(card.locator(".evidence")).to_have_text(f"Evidence: {stale.evidence['text']}")
    wait_for_socket(page)
    expect(page.locator("#connection-status")).to_be_empty()

    page.evaluate("window.__notReloaded = 'the task page'")
    card.locator("details.flag-own-actions > summary").click()
    card.get_by_role("button", name="Acknowledge").click()
    expect(page.locator("#messages")).to_contain_text("Acknowledged “Stale result handed on”.")
    card = page.locator(f"#flag-card-{stale.pk}")
    expect(card.locator(".flag-when")).to_contain_text("acknowledged")
    expect(card.get_by_role("button", name="Acknowledge")).to_have_count(0)
    assert page.evaluate("window.__notReloaded") == "the task page"  # htmx, not a reload
    stale.refresh_from_db()
    assert stale.acknowledged_at is not None
    assert stale.acknowledged_by_id == acting_user.pk
    # Acknowledged, it stays open but is taken up: the title counts what awaits attention.
    expect(page).to_have_title(re.compile(rf"^\({count - 1}\) "))


def test_a_task_created_while_the_list_is_open_shows_up(new_page, live_app, acting_user, source):
    page = new_page("light")
    log_in(page, acting_user, "/tasks/")
    expect(page.locator("#task-rows")).to_contain_text("No tasks yet")
    wait_for_socket(page)
    page.evaluate("window.__notReloaded = true")

    assert live_app.post_events(source.token, EVENTS)["accepted"] == len(EVENTS)

    shown = page.locator("#task-rows tr.task-row", has_text="Port the retry loop")
    expect(shown).to_be_visible(timeout=15_000)
    # Newest first: the last delegated of seed000's three tasks is on top.
    expect(page.locator("#task-rows tbody tr").first).to_contain_text("Review B")
    assert page.evaluate("window.__notReloaded") is True


def test_a_dropped_socket_shows_the_banner_then_resumes(new_page, live_app, acting_user, source):
    """The socket drops (closed with 1011 through a Playwright WebSocket route, and refused
    while "down"): the banner shows; the flags opened meanwhile arrive on reconnection."""
    assert live_app.post_events(source.token, BEFORE_FINALIZE)["accepted"] == len(BEFORE_FINALIZE)
    wait_for(lambda: "stale_result" in open_kinds(), what="the first evaluation")
    page = new_page("light")
    state = {"down": False, "open": []}

    def route(ws):
        if state["down"]:
            ws.close(code=1011, reason="test: the server is down")
            return
        state["open"].append((ws, ws.connect_to_server()))

    page.route_web_socket(re.compile(r"/ws/live/"), route)
    log_in(page, acting_user, "/tasks/")
    row = page.locator("#task-rows tr.task-row", has_text="Port the retry loop")
    expect(row).to_have_count(1)
    wait_for_socket(page)
    expect(page.locator("#connection-status")).to_be_empty()
    page.evaluate("window.__notReloaded = true")

    state["down"] = True
    page_side, server_side = state["open"].pop()
    server_side.close()
    page_side.close(code=1011, reason="test: the server went away")
    banner = page.locator("#connection-status .banner")
    expect(banner).to_contain_text("Live updates are interrupted")

    assert live_app.post_events(source.token, [EVENTS[FINALIZE]])["accepted"] == 1
    wait_for(lambda: open_kinds() == EXPECTED_OPEN, what="the finalization's flags")
    expect(row.locator('[title="flag kind: premature_completion"]')).to_have_count(0)

    state["down"] = False  # ws.js retries with growing pauses; the next one gets through
    for kind in sorted(NEWLY_OPEN):
        expect(row.locator(f'[title="flag kind: {kind}"]')).to_have_count(1, timeout=30_000)
    expect(banner).to_have_count(0)
    assert page.evaluate("window.__notReloaded") is True


def test_a_log_out_in_another_tab_ends_the_live_page_with_a_way_back(
    new_page, live_app, acting_user, source
):
    page = new_page("light")
    log_in(page, acting_user, "/tasks/")
    wait_for_socket(page)
    other = page.context.new_page()  # the same browser, so the same session
    other.goto("/")
    other.get_by_role("button", name="Log out").click()
    other.wait_for_url("**/login/**")
    banner = page.locator("#connection-status .banner")
    expect(banner).to_contain_text("Your session has ended", timeout=15_000)
    link = banner.get_by_role("link", name="Log in again")
    expect(link).to_have_attribute("href", "/login/?next=%2Ftasks%2F")
    expect(page.locator("html")).not_to_have_attribute("data-test-socket", "open")
    # No poll swaps the log-in page into this one.
    page.wait_for_timeout(1_000)
    expect(page.locator("#task-rows")).to_be_visible()
    link.click()
    page.wait_for_url("**/login/?next=%2Ftasks%2F")
    expect(page.get_by_label("User name")).to_be_visible()


def test_a_socket_closed_because_the_layer_was_lost_reconnects(
    new_page, live_app, acting_user, source
):
    """4503 (the channel layer lost, supervisor/live/layer.py) is a close htmx's ws
    extension does not retry: the page reconnects by itself and the banner goes."""
    page = new_page("light")
    state = {"open": []}

    def route(ws):
        state["open"].append((ws, ws.connect_to_server()))

    page.route_web_socket(re.compile(r"/ws/live/"), route)
    log_in(page, acting_user, "/tasks/")
    wait_for_socket(page)
    page_side, server_side = state["open"].pop()
    server_side.close()
    page_side.close(code=4503, reason="test: the channel layer was lost")
    banner = page.locator("#connection-status .banner")
    expect(banner).to_contain_text("Live updates are interrupted")
    expect(banner).to_have_count(0, timeout=15_000)
    assert len(state["open"]) == 1, "one reconnection"
    assert live_app.post_events(source.token, EVENTS)["accepted"] == len(EVENTS)
    shown = page.locator("#task-rows tr.task-row", has_text="Port the retry loop")
    expect(shown).to_be_visible(timeout=15_000)


def test_a_live_update_keeps_an_opened_disclosure_open(new_page, live_app, acting_user, source):
    """The operator opened "Other actions"; the next live frame for the task replaced
    the section and closed it under their pointer."""
    from supervisor.core.models import Task

    assert live_app.post_events(source.token, BEFORE_FINALIZE)["accepted"] == len(BEFORE_FINALIZE)
    wait_for(lambda: "stale_result" in open_kinds(), what="the first evaluation")
    task = Task.objects.get(task_id=RETRY_PORT)
    page = new_page("light")
    log_in(page, acting_user, f"/tasks/{task.pk}/")
    wait_for_socket(page)
    page.evaluate("document.getElementById('actions').dataset.before = 'the first render'")
    disclosure = page.locator("details.other-actions")
    disclosure.locator("summary").click()
    expect(disclosure).to_have_attribute("open", "")

    assert live_app.post_events(source.token, [EVENTS[FINALIZE]])["accepted"] == 1
    # The section was swapped (its mark is gone), and the disclosure is still open.
    expect(page.locator("#actions[data-before]")).to_have_count(0, timeout=30_000)
    expect(page.locator("details.other-actions")).to_have_attribute("open", "")
