"""A permission cast for every page: stranger, viewer (reads), operator (acts)."""

import json

import pytest
from django.test import Client

from supervisor.core.models import DeadLetter, Flag, Task, Thread
from supervisor.notify.models import Channel, Notification, Route
from tests.factories import make_tasks
from tests.web.cast import ADMIN, ANONYMOUS, CAST, OPERATOR, VIEWER, login_as, make_user

pytestmark = pytest.mark.django_db

ACTION_FORM = 'action="/flags/'


@pytest.fixture
def pages(source, three_levels, silent_source):
    make_tasks(source, 2)
    task = Task.objects.get(task_id="task:release-plan")
    thread = Thread.objects.get(thread_id="thread:lead-release")
    return {
        "overview": "/",
        "list": "/tasks/",
        "task": f"/tasks/{task.pk}/",
        "thread": f"/threads/{thread.pk}/",
    }


@pytest.mark.parametrize("page", ["overview", "list", "task", "thread"])
def test_a_stranger_is_sent_to_log_in(client, pages, page):
    response = client.get(pages[page])
    assert response.status_code == 302
    assert response.url.startswith("/login/?next=")


@pytest.mark.parametrize("page", ["overview", "list", "task", "thread"])
def test_a_viewer_reads_every_page_without_action_forms(client, viewer, pages, page):
    client.force_login(viewer)
    response = client.get(pages[page])
    assert response.status_code == 200
    assert ACTION_FORM not in response.content.decode()


@pytest.mark.parametrize("page", ["overview", "task"])
def test_an_operator_gets_the_action_forms(client, acting, pages, page):
    client.force_login(acting)
    html = client.get(pages[page]).content.decode()
    assert ACTION_FORM in html
    assert 'name="csrfmiddlewaretoken"' in html


@pytest.mark.parametrize("page", ["list", "thread"])
def test_an_operator_reads_the_pages_without_flag_forms(client, acting, pages, page):
    # The list's bulk actions come later; thread flags are acted on from the overview.
    client.force_login(acting)
    response = client.get(pages[page])
    assert response.status_code == 200
    assert ACTION_FORM not in response.content.decode()


def test_a_stranger_may_not_post_a_flag_action(client, pages):
    flag = Flag.objects.filter(state="open").first()
    response = client.post(f"/flags/{flag.pk}/", {"action": "acknowledge"})
    assert response.status_code == 302 and response.url.startswith("/login/")


def test_a_viewer_may_not_post_a_flag_action(client, viewer, pages):
    client.force_login(viewer)
    flag = Flag.objects.filter(state="open").first()
    assert client.post(f"/flags/{flag.pk}/", {"action": "acknowledge"}).status_code == 403


def test_acting_on_a_source_flag_returns_to_the_overview(client, acting, silent_source):
    client.force_login(acting)
    silent, _ = silent_source
    response = client.post(f"/flags/{silent.pk}/", {"action": "acknowledge"})
    assert response.status_code == 302 and response.url == "/"


# --- the permission matrix ----------------------------------------------------------
#
# One row per (url, method): the status each member of the cast gets. LOGIN is a
# redirect to the log-in page. `{source}`, `{user}`, `{dead}`, `{flag}`, `{task}`,
# `{channel}`, `{route}` and `{note}` are filled from the `matrix_objects` fixture. A
# row may carry a fourth item, the data to post (sent as JSON to /api/ URLs); without it
# the POST is empty. Append rows for new URLs here: the CSRF test below covers every
# POST row outside /api/ by itself.

LOGIN = "login"
ADMIN_ONLY = {ANONYMOUS: LOGIN, VIEWER: 403, OPERATOR: 403}
ACTORS = {ANONYMOUS: LOGIN, VIEWER: 403}

MATRIX = [
    # admin: sources and tokens
    ("/admin/sources/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/sources/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/sources/new/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/sources/new/", "POST", {**ADMIN_ONLY, ADMIN: 200}),  # the form, with errors
    ("/admin/sources/{source}/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/sources/{source}/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/sources/{source}/connector/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/sources/{source}/connector/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    ("/admin/sources/{source}/test/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/sources/{source}/test/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    ("/admin/sources/{source}/revoke/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/sources/{source}/revoke/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    ("/admin/sources/{source}/rotate/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/sources/{source}/rotate/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    # admin: users and roles
    ("/admin/users/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/users/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/users/new/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/users/new/", "POST", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/users/{user}/role/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/users/{user}/role/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    # admin: dead letters
    ("/admin/dead-letters/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/dead-letters/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/dead-letters/{dead}/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/dead-letters/{dead}/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/dead-letters/{dead}/replay/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/dead-letters/{dead}/replay/", "POST", {**ADMIN_ONLY, ADMIN: 200}),
    # admin: alert channels, routes and the notification outbox
    ("/admin/channels/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/channels/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/channels/new/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/channels/new/", "POST", {**ADMIN_ONLY, ADMIN: 200}),  # the form, with errors
    ("/admin/channels/{channel}/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/channels/{channel}/", "POST", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/channels/{channel}/enabled/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/channels/{channel}/enabled/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    ("/admin/channels/{channel}/test/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/channels/{channel}/test/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    ("/admin/routes/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/routes/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/routes/new/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/routes/new/", "POST", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/routes/{route}/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/routes/{route}/", "POST", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/notifications/", "GET", {**ADMIN_ONLY, ADMIN: 200}),
    ("/admin/notifications/", "POST", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/notifications/{note}/retry/", "GET", {**ADMIN_ONLY, ADMIN: 405}),
    ("/admin/notifications/{note}/retry/", "POST", {**ADMIN_ONLY, ADMIN: 302}),
    # the audit: everyone logged in reads it
    ("/audit/", "GET", {ANONYMOUS: LOGIN, VIEWER: 200, OPERATOR: 200, ADMIN: 200}),
    ("/audit/", "POST", {ANONYMOUS: LOGIN, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    # Prometheus figures: a bearer token with the metrics scope only, never a session
    ("/metrics", "GET", {ANONYMOUS: 401, VIEWER: 401, OPERATOR: 401, ADMIN: 401}),
    ("/metrics", "POST", {ANONYMOUS: 405, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    # acting on a flag: the page's form and the API
    ("/flags/{flag}/", "GET", {ANONYMOUS: LOGIN, VIEWER: 405, OPERATOR: 405, ADMIN: 405}),
    (
        "/flags/{flag}/",
        "POST",
        {ANONYMOUS: LOGIN, VIEWER: 403, OPERATOR: 302, ADMIN: 302},
        {"action": "acknowledge"},
    ),
    (
        "/api/v1/flags/{flag}",
        "POST",
        {ANONYMOUS: 401, VIEWER: 403, OPERATOR: 200, ADMIN: 200},
        {"action": "acknowledge"},
    ),
    # acting on a task: the preview and confirm page, bulk from the list, and the API
    ("/tasks/{task}/actions/cancel/", "GET", {**ACTORS, OPERATOR: 200, ADMIN: 200}),
    (
        "/tasks/{task}/actions/cancel/",
        "POST",
        {**ACTORS, OPERATOR: 302, ADMIN: 302},
        {"reason": "matrix"},
    ),
    (
        "/tasks/bulk/",
        "GET",
        {**ACTORS, OPERATOR: 200, ADMIN: 200},
        {"kind": "cancel", "scope": "matching", "q": "t0"},
    ),
    (
        "/tasks/bulk/",
        "POST",
        {**ACTORS, OPERATOR: 302, ADMIN: 302},
        {"kind": "cancel", "scope": "matching", "q": "t0", "expected": "1"},
    ),
    (
        "/api/v1/tasks/task%3At0/actions",
        "POST",
        {ANONYMOUS: 401, VIEWER: 403, OPERATOR: 202, ADMIN: 202},
        {"kind": "continue"},
    ),
    (
        "/api/v1/actions/bulk",
        "POST",
        {ANONYMOUS: 401, VIEWER: 403, OPERATOR: 200, ADMIN: 200},
        {"kind": "continue", "filter": {"q": "t0"}},
    ),
]


def _row_id(row) -> str:
    return f"{row[1]} {row[0]}"


@pytest.fixture
def matrix_objects(source, silent_source):
    make_tasks(source, 1)
    # Task actions need a connector to be accepted (202) rather than refused (409).
    source.connector = "simulator"
    source.save()
    user = make_user("ann", "viewer")
    dead = DeadLetter.objects.create(source=source, event_id="e1", body="{}", error="bad")
    silent, _ = silent_source
    channel = Channel.objects.create(name="matrix", kind="apprise", target="json://h/x")
    route = Route.objects.create(channel=channel)
    note = Notification.objects.create(
        key="matrix:1", channel=channel, kind="test", subject="s", body="b", state="failing"
    )
    return {
        "channel": channel.pk,
        "route": route.pk,
        "note": note.pk,
        "source": source.pk,
        "user": user.pk,
        "dead": dead.pk,
        "flag": silent.pk,
        "task": Task.objects.get(task_id="task:t0").pk,
    }


def _request(client, row, objects):
    url, method, _, *rest = row
    url = url.format(**objects)
    data = rest[0] if rest else {}
    if method == "GET":
        return client.get(url, data)
    if url.startswith("/api/"):
        return client.post(url, json.dumps(data), content_type="application/json")
    return client.post(url, data)


@pytest.mark.parametrize("role", CAST)
@pytest.mark.parametrize("row", MATRIX, ids=_row_id)
def test_the_permission_matrix(client, matrix_objects, row, role):
    login_as(client, role)
    response = _request(client, row, matrix_objects)
    expected = row[2][role]
    if expected == LOGIN:
        assert response.status_code == 302 and response.url.startswith("/login/?next="), (
            response.status_code
        )
    else:
        assert response.status_code == expected


FORM_POSTS = [row for row in MATRIX if row[1] == "POST" and not row[0].startswith("/api/")]


@pytest.mark.parametrize("row", FORM_POSTS, ids=_row_id)
def test_a_form_post_without_the_csrf_token_is_refused(matrix_objects, row):
    client = Client(enforce_csrf_checks=True)
    login_as(client, ADMIN)
    assert _request(client, row, matrix_objects).status_code == 403
