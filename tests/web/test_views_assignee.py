"""A task's problem has an assignee (Sentry's assign): operators assign themselves or
another operator, or unassign; the lists show it and filter by it; the audit lists it."""

import pytest

from supervisor.core.models import Change, Task
from supervisor.core.triage.assignment import do_assign_task
from tests.support.cast import ADMIN, ANONYMOUS, OPERATOR, VIEWER, login_as, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def task(three_levels):
    return Task.objects.get(task_id="task:release-plan")


def assign(client, task, assignee="me", action="assign"):
    return client.post(
        f"/tasks/{task.pk}/assignee/", {"action": action, "assignee": assignee}, follow=True
    )


def assignments(task) -> list[tuple[str, dict]]:
    rows = Change.objects.filter(
        subject_type="task",
        subject_id=task.task_id,
        kind__startswith="task.",
        kind__contains="ssign",
    ).order_by("pk")
    return [(c.kind, c.payload) for c in rows]


def test_assign_to_me_shows_my_name_on_the_task_page(client, task):
    me = login_as(client, OPERATOR)
    body = assign(client, task).content.decode()
    assert "Assigned to you." in body
    task.refresh_from_db()
    assert task.assignee == me and task.assigned_at is not None
    assert '<span class="assignee">as-operator</span>' in body


def test_assigning_the_same_user_twice_writes_once(client, task):
    login_as(client, OPERATOR)
    assign(client, task)
    body = assign(client, task).content.decode()
    assert "Already assigned to you." in body
    assert assignments(task) == [
        ("task.assigned", {"actor": "user:as-operator", "assignee": "as-operator"})
    ]


def test_assigning_another_operator_and_unassigning_are_audited(client, task):
    login_as(client, OPERATOR)
    make_user("bea", OPERATOR)
    assign(client, task)
    assert "Assigned to bea." in assign(client, task, "bea").content.decode()
    assert "Nobody is assigned now." in assign(client, task, "", "unassign").content.decode()
    assert "Nobody was assigned." in assign(client, task, "", "unassign").content.decode()
    assert [kind for kind, _ in assignments(task)] == [
        "task.assigned",
        "task.assigned",
        "task.unassigned",
    ]
    assert assignments(task)[1][1]["previous"] == "as-operator"
    task.refresh_from_db()
    assert task.assignee is None and task.assigned_at is None
    audit = client.get("/audit/?kind=assignments").content.decode()
    assert "Assigned task" in audit and "to bea" in audit and "Unassigned task" in audit


@pytest.mark.parametrize("role", [ANONYMOUS, VIEWER])
def test_who_may_not_act_cannot_assign(client, task, role):
    login_as(client, role)
    response = client.post(f"/tasks/{task.pk}/assignee/", {"action": "assign", "assignee": "me"})
    assert response.status_code == (302 if role == ANONYMOUS else 403)
    task.refresh_from_db()
    assert task.assignee is None and not assignments(task)


@pytest.mark.parametrize("role", [OPERATOR, ADMIN])
def test_operators_and_admins_may_assign(client, task, role):
    user = login_as(client, role)
    assign(client, task)
    task.refresh_from_db()
    assert task.assignee == user


def test_a_viewer_sees_the_assignee_but_no_assign_form(client, task):
    do_assign_task(task, make_user("bea", OPERATOR), task.delegated_at)
    login_as(client, VIEWER)
    body = client.get(f"/tasks/{task.pk}/").content.decode()
    assert '<span class="assignee">bea</span>' in body
    assert "Assign to me" not in body and f"/tasks/{task.pk}/assignee/" not in body


def test_a_viewer_or_an_unknown_user_cannot_be_assigned(client, task):
    login_as(client, OPERATOR)
    make_user("vic", VIEWER)
    body = assign(client, task, "vic").content.decode()
    assert "Could not assign: vic may not act, so cannot be assigned." in body
    body = assign(client, task, "nobody-such").content.decode()
    assert "Could not assign: no user is named “nobody-such”." in body
    body = assign(client, task, "me", "promote").content.decode()
    assert "Could not promote: unknown action." in body
    task.refresh_from_db()
    assert task.assignee is None and not assignments(task)


def test_the_assign_form_offers_operators_only(client, task):
    login_as(client, OPERATOR)
    make_user("bea", OPERATOR)
    make_user("vic", VIEWER)
    body = client.get(f"/tasks/{task.pk}/").content.decode()
    assert '<option value="bea">bea</option>' in body
    assert '<option value="vic">' not in body


def test_the_lists_show_the_assignee(client, task):
    do_assign_task(task, make_user("bea", OPERATOR), task.delegated_at)
    login_as(client, VIEWER)
    row = client.get("/tasks/").content.decode().split(f'id="task-row-{task.pk}"')[1]
    assert '<span class="assignee">bea</span>' in row.split("</tr>")[0]
    overview = client.get("/").content.decode()
    needing = overview.split('id="overview-tasks"')[1].split("</section>")[0]
    assert '<span class="assignee">bea</span>' in needing


def test_the_list_filters_by_assignee(client, task, three_levels):
    me = login_as(client, OPERATOR)
    bea = make_user("bea", OPERATOR)
    other = Task.objects.filter(known=True).exclude(pk=task.pk).first()
    do_assign_task(task, me, task.delegated_at)
    do_assign_task(other, bea, task.delegated_at)
    unassigned = Task.objects.filter(known=True, assignee__isnull=True).count()

    def listed(query):
        response = client.get(f"/tasks/?{query}")
        assert response.status_code == 200
        return {row["task"].pk for row in response.context["rows"]}

    assert listed("assigned=me") == {task.pk}
    assert listed("assigned=bea") == {other.pk}
    assert len(listed("assigned=nobody")) == unassigned
    assert task.pk not in listed("assigned=nobody")


def test_an_unknown_assignee_filter_is_a_400_that_says_why(client, task):
    login_as(client, VIEWER)
    response = client.get("/tasks/?assigned=ghost")
    assert response.status_code == 400
    assert "no user is named “ghost”" in response.content.decode()


def test_assigning_is_pushed_to_the_live_task_page(client, task):
    """The change names the task, so the relay re-renders its page, row and overview."""
    from supervisor.live.notes import notes_after
    from supervisor.live.rendering import Page, render_frame

    login_as(client, OPERATOR)
    last = Change.objects.order_by("-pk").values_list("pk", flat=True).first()
    assign(client, task)
    notes = notes_after(last)
    assert [n["tasks"] for n in notes if n["kind"] == "task.assigned"] == [[task.pk]]
    frame = render_frame(notes, Page("task", task.pk, True))
    assert '<span class="assignee">as-operator</span>' in frame
    row = render_frame(notes, Page("list", 0, False))
    assert f'id="task-row-{task.pk}"' in row and '<span class="assignee">as-operator</span>' in row


def test_a_bulk_action_on_the_matching_tasks_reads_mine_as_the_one_acting(client, task):
    """The bulk form carries the list's filters: "assigned to me" is the operator acting."""
    me = login_as(client, OPERATOR)
    do_assign_task(task, me, task.delegated_at)
    query = {"kind": "acknowledge", "scope": "matching", "state": "open", "assigned": "me"}
    html = client.get("/tasks/bulk/", query).content.decode()
    open_flags = task.flags.filter(state="open").count()
    assert f"{open_flags} open flags</strong> on <strong>1 task" in html
