"""The audit page: actions, flag changes by people and admin changes; who, when, what, why."""

import re

import pytest

from supervisor.core import clock
from supervisor.core.access.roles import do_create_user, do_set_role
from supervisor.core.models import Change, Flag, Task
from tests.support.cast import ADMIN, ANONYMOUS, OPERATOR, VIEWER, login_as
from tests.support.factories import make_tasks

pytestmark = pytest.mark.django_db


def action_change(task: Task, kind="action.requested", **payload):
    """An Action's change row as the actions code writes it."""
    return Change.objects.create(
        at=clock.now(),
        namespace_id=task.namespace_id,
        kind=kind,
        subject_type="task",
        subject_id=task.task_id,
        payload={"action": 1, "kind": "cancel", "state": kind.split(".")[1], **payload},
    )


@pytest.fixture
def task(source):
    make_tasks(source, 1)
    return Task.objects.get(task_id="task:t0")


def rows(html: str) -> list[str]:
    return re.findall(r'<tr id="audit-\d+">(.*?)</tr>', html, flags=re.S)


@pytest.mark.parametrize("role", [VIEWER, OPERATOR, ADMIN])
def test_every_logged_in_user_reads_the_audit(client, role):
    login_as(client, role)
    assert client.get("/audit/").status_code == 200


def test_a_stranger_is_sent_to_log_in(client):
    login_as(client, ANONYMOUS)
    response = client.get("/audit/")
    assert response.status_code == 302 and response.url.startswith("/login/")


def test_an_operators_flag_change_is_there_and_evaluations_are_not(client, silent_source):
    operator = login_as(client, OPERATOR)
    silent, _ = silent_source
    client.post(f"/flags/{silent.pk}/", {"action": "resolve", "reason": "planned maintenance"})
    assert "Opened flag" not in client.get("/audit/").content.decode()
    # The two openings by evaluation are not audit entries; the resolution is.
    (row,) = rows(client.get("/audit/?kind=flags").content.decode())
    assert f"user:{operator.get_username()}" in row
    assert 'Resolved flag <span title="flag kind: source_silent">Source silent</span>' in row
    assert "planned maintenance" in row


def test_an_action_is_one_row_linking_its_task_with_its_steps_reason_and_error(client, task):
    """An action took a row per step (requested, sending, failed), and named its task
    and kind by their raw ids."""
    login_as(client, VIEWER)
    action_change(task, actor="user:op", reason="child is looping")
    action_change(task, kind="action.sending", actor="user:op", reason="child is looping")
    action_change(task, kind="action.failed", actor="user:op", error="connector said 500")
    html = client.get("/audit/?kind=actions").content.decode()
    (row,) = rows(html)
    assert f'<a href="/tasks/{task.pk}/" title="task:t0">Task 0</a>' in row
    assert '<span title="cancel">Cancel the task</span>' in row
    assert "requested → being sent → failed" in row
    assert "child is looping" in row and "connector said 500" in row


def test_a_snooze_says_until_when(client, silent_source):
    login_as(client, OPERATOR)
    silent, _ = silent_source
    client.post(f"/flags/{silent.pk}/", {"action": "snooze", "for": "1h"})
    (row,) = rows(client.get("/audit/?kind=flags").content.decode())
    until = Flag.objects.get(pk=silent.pk).snoozed_until.isoformat()
    assert "until:" in row and until in row


def test_admin_changes_are_there(client, source):
    admin = login_as(client, ADMIN)
    ann, _ = do_create_user("ann", "viewer", by=admin)
    do_set_role(ann, "operator", by=admin)
    html = client.get("/audit/?kind=admin").content.decode()
    role, created, _ = rows(html)  # the last: as-admin's own role
    assert "Changed the role of" in role and "to operator (was viewer)" in role
    assert "Created user" in created and "with the viewer role" in created
    assert 'href="/admin/users/"' in role  # an admin gets the link


def test_filters_by_kind_and_actor(client, task, silent_source):
    operator = login_as(client, OPERATOR)
    silent, _ = silent_source
    client.post(f"/flags/{silent.pk}/", {"action": "acknowledge"})
    action_change(task, actor="source:ci")
    do_create_user("ann", "viewer", by=operator)
    # With the role the operator was given to log in: four in all.
    assert len(rows(client.get("/audit/").content.decode())) == 4
    (flag_row,) = rows(client.get("/audit/?kind=flags").content.decode())
    assert "Acknowledged flag" in flag_row
    (action_row,) = rows(client.get("/audit/?kind=actions").content.decode())
    assert "source:ci" in action_row
    (admin_row,) = rows(client.get("/audit/?kind=admin&actor=user:as-operator").content.decode())
    assert "Created user <code>ann</code>" in admin_row
    (by_ci,) = rows(client.get("/audit/?actor=source:ci").content.decode())
    assert 'Action <span title="cancel">Cancel the task</span>' in by_ci


def test_pages_newest_first_by_keyset(client, task):
    login_as(client, VIEWER)
    for n in range(60):
        action_change(task, actor="user:op", reason=f"reason {n:02d}", action=n)
    first = client.get("/audit/?kind=actions").content.decode()
    assert len(rows(first)) == 50
    assert first.index("reason 59") < first.index("reason 10")
    next_link = re.search(r'href="\?([^"]+)" rel="next"', first)[1].replace("&amp;", "&")
    second = client.get(f"/audit/?{next_link}").content.decode()
    assert len(rows(second)) == 10
    assert "reason 09" in second and "reason 10" not in second
    assert 'rel="next"' not in second


def test_htmx_gets_the_rows_alone(client, task):
    login_as(client, VIEWER)
    action_change(task, actor="user:op")
    html = client.get("/audit/?kind=actions", headers={"HX-Request": "true"}).content.decode()
    assert html.lstrip().startswith('<div id="audit-rows">') and "<html" not in html


def test_the_page_costs_the_same_queries_for_many_rows(client, task, django_assert_max_num_queries):
    login_as(client, VIEWER)
    action_change(task, actor="user:op")
    # 7: the page's own 6 and the "data as of" line every page carries (one query).
    with django_assert_max_num_queries(7) as few:
        client.get("/audit/")
    for _ in range(40):
        action_change(task, actor="user:op")
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get("/audit/")
