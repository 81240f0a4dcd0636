"""Owners and saved views in a real browser: assign a task's problem to me, see my name
in the lists (and pushed live to a list open elsewhere), find it with "assigned to: me";
save views of the list, open one, and see that a second user gets the shared one only."""

import re

import pytest
from playwright.sync_api import expect

from supervisor.core.access.roles import OPERATOR, VIEWER, do_set_role
from supervisor.core.models import Task
from tests.support.browser import PASSWORD, log_in, seed, wait_for_socket

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def second_user(transactional_db, django_user_model):
    user = django_user_model.objects.create_user("second", password=PASSWORD)
    do_set_role(user, VIEWER)
    return user


def test_assign_to_me_shows_in_the_lists_and_the_mine_filter_finds_it(
    new_page, live_app, acting_user, source
):
    seeded = seed(live_app, source)
    do_set_role(acting_user, OPERATOR)
    watcher = new_page("dark")
    log_in(watcher, acting_user, "/tasks/")
    wait_for_socket(watcher)
    row = watcher.locator(f"#task-row-{seeded.task_pk}")
    expect(row.locator("td[data-label='Assigned to']")).to_have_text("nobody")

    page = new_page("light")
    log_in(page, acting_user, f"/tasks/{seeded.task_pk}/")
    page.locator(".problem-card").get_by_role("button", name="Assign to me").click()
    expect(page.locator("#task-assignee")).to_contain_text("operator")
    expect(page.locator(".problem-card .assign-who")).to_contain_text("Assigned to: operator")
    # The other tab's list shows it without a reload, over its live socket.
    expect(row.locator("td[data-label='Assigned to']")).to_have_text("operator")

    page.goto("/tasks/")
    page.get_by_label("Assigned to").select_option("me")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"assigned=me"))
    rows = page.locator("#task-rows tbody tr.task-row")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_id(f"task-row-{seeded.task_pk}")
    page.get_by_label("Assigned to").select_option("nobody")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator(f"#task-row-{seeded.task_pk}")).to_have_count(0)
    assert page.evaluate("window.__cspViolations") == []

    # Unassigned again from the task page: the list says nobody once more.
    page.goto(f"/tasks/{seeded.task_pk}/")
    page.locator("#assign-other > summary").click()
    page.locator(".problem-card").get_by_role("button", name="Unassign").click()
    expect(page.locator("#task-assignee")).to_contain_text("nobody")
    expect(row.locator("td[data-label='Assigned to']")).to_have_text("nobody")


def test_a_saved_view_opens_from_the_list_and_only_the_shared_one_is_seen_by_others(
    new_page, live_app, acting_user, second_user, source
):
    seeded = seed(live_app, source)
    status = Task.objects.get(pk=seeded.task_pk).status  # seed000's task, as reported
    page = new_page("light")
    log_in(page, acting_user, "/tasks/")
    page.get_by_label("Status").select_option(status)
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(rf"status={status}"))
    page.get_by_label("Save this view as").fill("running now")
    page.get_by_label("share with everyone").first.check()
    page.get_by_role("button", name="Save this view").click()
    expect(page.locator("#messages")).to_contain_text(
        "Saved the view “running now”, seen by everyone."
    )

    page.goto("/tasks/?flag=stuck")
    page.get_by_label("Save this view as").fill("my stuck ones")
    page.get_by_role("button", name="Save this view").click()
    expect(page.locator(".saved-views")).to_contain_text("my stuck ones")

    # Opened from the list, a view applies its filters: the form shows them.
    page.goto("/tasks/")
    page.locator(".saved-views").get_by_role("link", name="running now").click()
    expect(page).to_have_url(re.compile(rf"/tasks/\?status={status}$"))
    expect(page.get_by_label("Status")).to_have_value(status)
    expect(page.locator(f"#task-row-{seeded.task_pk}")).to_be_visible()

    other = new_page("dark")
    log_in(other, second_user, "/tasks/")
    views = other.locator(".saved-views")
    expect(views.get_by_role("link", name="running now")).to_be_visible()
    expect(views).to_contain_text("shared by operator")
    expect(views.get_by_role("link", name="my stuck ones")).to_have_count(0)
    expect(views.get_by_text("Rename or delete")).to_have_count(0)
    # The overview lists the shared view too.
    other.goto("/")
    expect(other.get_by_role("navigation", name="Saved views")).to_contain_text("running now")

    # The owner renames it; the other user then sees the new name.
    page.goto("/tasks/")
    mine = page.locator(".saved-view").filter(has_text="running now")
    mine.locator(".saved-view-edit summary").click()
    edit = mine.locator(".saved-view-edit form").first
    edit.get_by_label("Name").fill("running, team")
    edit.get_by_role("button", name="Save").click()
    other.goto("/tasks/")
    expect(other.locator(".saved-views").get_by_role("link", name="running, team")).to_be_visible()
    assert page.evaluate("window.__cspViolations") == []
    assert other.evaluate("window.__cspViolations") == []
