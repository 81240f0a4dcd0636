"""Every action path is idempotent: the web forms and the API, one task and
bulk, with and without an Idempotency-Key. A confirmation of a preview sent again, in
sequence or in parallel, is the same request: it sends nothing new. A real receiver on
loopback counts what reaches it; a real Celery worker sends."""

import http.cookiejar
import json
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import reverse

from supervisor.core.access.sources import do_create_source
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, Task
from tests.support.cast import make_user
from tests.support.factories import at, make_tasks
from tests.support.forms import confirm_form
from tests.support.receiver import Receiver
from tests.support.workers import celery_worker, purge_broker, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "a-test-secret-of-some-length"
BULK = "/api/v1/actions/bulk"
KINDS = ("continue", "cancel", "deliver")
TASKS = 2  # tasks of each bulk action
PARALLEL = 6  # confirmations of one preview sent at once


@pytest.fixture(scope="module")
def worker(django_db_setup, django_db_blocker):
    """One real worker for the module: it sends what the confirmations queue."""
    purge_broker()
    with celery_worker() as running:
        yield running
    purge_broker()


@pytest.fixture
def receiver():
    with Receiver(secret=SECRET) as r:
        yield r


@pytest.fixture
def acting(transactional_db, receiver, worker):
    """Two tasks whose child has a run under way (so a cancel has something to stop) and
    a finished result (so a delivery has something to send), bound to the receiver."""
    source, token = do_create_source("t3", scopes="ingest,read,act")
    source.connector = "webhook"
    source.connector_settings = {"url": receiver.url, "secret": SECRET, "timeout": 5}
    source.save()
    source.token = token
    make_tasks(source, TASKS, prefix="i", title="Idem")
    apply_events(source, [e for n in range(TASKS) for e in run_under_way(n)])
    return source


def run_under_way(n: int) -> list[dict]:
    thread, run = f"thread:i{n}", f"thread:i{n}:2"
    return [
        {"id": f"i{n}-r2", "type": "run.requested", "at": at(n * 10 + 5),
         "data": {"thread": thread, "run": run, "ordinal": 2, "trigger": {"kind": "other"}}},
        {"id": f"i{n}-s2", "type": "run.started", "at": at(n * 10 + 6),
         "data": {"thread": thread, "run": run}},
    ]  # fmt: skip


def sent(receiver, kind: str) -> Counter:
    """Once every action is settled: how many distinct sends of `kind` reached the
    receiver for each task."""
    wait_for(
        lambda: not Action.objects.filter(state__in=("queued", "sending")).exists(),
        what="the worker to send every action",
    )
    assert set(Action.objects.values_list("state", flat=True)) <= {"succeeded"}
    return Counter(
        d["action"]["task_id"] for d in receiver.deliveries if d["action"]["kind"] == kind
    )


def at_once(n: int, call) -> list:
    """`call()` on `n` threads released together; their answers."""
    start = threading.Barrier(n)
    answers, lock = [], threading.Lock()

    def one():
        start.wait()
        answer = call()
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    return answers


def send(url: str, *, body: bytes | None = None, headers: dict | None = None):
    """(status, body bytes) of one real request; redirects are answers, not followed."""
    request = urllib.request.Request(url, data=body, headers=headers or {}, method="POST")
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


# --- the API ----------------------------------------------------------------------------


def api(live_server, path: str, body: dict, token: str, **headers):
    status, answer = send(
        live_server.url + path,
        body=json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            **headers,
        },
    )
    return status, json.loads(answer)


def actions_path(task_id: str) -> str:
    return f"/api/v1/tasks/{quote(task_id, safe='')}/actions"


def api_preview(client, source, task_id: str, kind: str) -> str:
    answer = client.get(
        actions_path(task_id) + "/preview",
        {"kind": kind},
        headers={"Authorization": f"Bearer {source.token}"},
    ).json()
    assert answer["allowed"], answer
    return answer["preview"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_api_one_task_a_preview_confirmed_again_and_at_once_sends_once(
    kind, acting, receiver, live_server
):
    client = Client()
    path, body = actions_path("task:i0"), {"kind": kind}
    digest = api_preview(client, acting, "task:i0", kind)
    first = api(live_server, path, {**body, "preview": digest}, acting.token)
    again = api(live_server, path, {**body, "preview": digest}, acting.token)
    assert first[0] == again[0] == 202, (first, again)
    assert again[1]["id"] == first[1]["id"]
    answers = at_once(
        PARALLEL, lambda: api(live_server, path, {**body, "preview": digest}, acting.token)
    )
    assert [status for status, _ in answers] == [202] * PARALLEL, answers
    assert {answer["id"] for _, answer in answers} == {first[1]["id"]}
    # A preview taken now is another request: one preview, one confirmation, at once.
    fresh = api_preview(client, acting, "task:i1", kind)
    answers = at_once(
        PARALLEL,
        lambda: api(live_server, actions_path("task:i1"), {**body, "preview": fresh}, acting.token),
    )
    assert [status for status, _ in answers] == [202] * PARALLEL, answers
    assert len({answer["id"] for _, answer in answers}) == 1
    assert sent(receiver, kind) == {"task:i0": 1, "task:i1": 1}


def test_api_a_deliberate_second_continue_takes_a_new_preview(acting, receiver, live_server):
    client = Client()
    path = actions_path("task:i0")
    for _ in range(2):
        digest = api_preview(client, acting, "task:i0", "continue")
        status, _ = api(live_server, path, {"kind": "continue", "preview": digest}, acting.token)
        assert status == 202
    assert sent(receiver, "continue") == {"task:i0": 2}


def bulk_preview(live_server, kind: str, token: str) -> dict:
    status, answer = api(live_server, BULK, {"kind": kind, "filter": {"q": "Idem"}}, token)
    assert status == 200 and answer["count"] == TASKS, answer
    return answer


def bulk_confirm(live_server, kind: str, selection: str, token: str, **headers):
    ask = {"kind": kind, "filter": {"q": "Idem"}, "confirm": True, "selection": selection}
    return api(live_server, BULK, ask, token, **headers)


@pytest.mark.parametrize("kind", KINDS)
def test_api_bulk_a_selection_confirmed_again_and_at_once_sends_once(
    kind, acting, receiver, live_server
):
    selection = bulk_preview(live_server, kind, acting.token)["selection"]
    status, first = bulk_confirm(live_server, kind, selection, acting.token)
    assert status == 200 and len(first["actions"]) == TASKS, first
    status, again = bulk_confirm(live_server, kind, selection, acting.token)
    # The same request: nothing new is asked, and the answer names what was.
    assert status == 200 and again["actions"] == [] and again["refused"] == [], again
    assert {a["id"] for a in again["already"]} == {a["id"] for a in first["actions"]}
    answers = at_once(PARALLEL, lambda: bulk_confirm(live_server, kind, selection, acting.token))
    assert all(status == 200 and not a["actions"] for status, a in answers), answers
    assert Action.objects.count() == TASKS
    assert sent(receiver, kind) == {f"task:i{n}": 1 for n in range(TASKS)}


@pytest.mark.parametrize("kind", ("continue", "cancel"))
def test_api_bulk_a_fresh_selection_confirmed_at_once_sends_once(
    kind, acting, receiver, live_server
):
    selection = bulk_preview(live_server, kind, acting.token)["selection"]
    answers = at_once(PARALLEL, lambda: bulk_confirm(live_server, kind, selection, acting.token))
    assert all(status == 200 for status, _ in answers), answers
    # Each task's action is asked by one of them; the others answer it as already asked.
    assert sum(len(a["actions"]) for _, a in answers) == TASKS, answers
    assert sent(receiver, kind) == {f"task:i{n}": 1 for n in range(TASKS)}


def test_api_bulk_honours_an_idempotency_key_across_previews(acting, receiver, live_server):
    # A client that retries the whole exchange (preview, then confirm) under one key.
    key = {"Idempotency-Key": "nightly-continue-1"}
    answers = []
    for _ in range(2):
        selection = bulk_preview(live_server, "continue", acting.token)["selection"]
        answers.append(bulk_confirm(live_server, "continue", selection, acting.token, **key))
    (s1, first), (s2, again) = answers
    assert s1 == s2 == 200, answers
    assert len(first["actions"]) == TASKS and again["actions"] == []
    assert {a["id"] for a in again["already"]} == {a["id"] for a in first["actions"]}
    # Without the key, a new preview is a deliberate new request.
    selection = bulk_preview(live_server, "continue", acting.token)["selection"]
    status, third = bulk_confirm(live_server, "continue", selection, acting.token)
    assert status == 200 and len(third["actions"]) == TASKS
    assert sent(receiver, "continue") == {f"task:i{n}": 2 for n in range(TASKS)}


def test_api_bulk_a_key_used_for_another_action_is_409(acting, live_server):
    key = {"Idempotency-Key": "bulk-1"}
    selection = bulk_preview(live_server, "continue", acting.token)["selection"]
    assert bulk_confirm(live_server, "continue", selection, acting.token, **key)[0] == 200
    selection = bulk_preview(live_server, "cancel", acting.token)["selection"]
    status, answer = bulk_confirm(live_server, "cancel", selection, acting.token, **key)
    assert status == 409 and "another action" in answer["error"], answer
    assert not Action.objects.filter(kind="cancel").exists()


# --- the web forms ----------------------------------------------------------------------


@pytest.fixture
def operator(acting):
    """A logged-in operator's cookies and CSRF token, for real requests."""
    user = make_user("olga", "operator")
    client = Client()
    client.force_login(user)
    return client


def browser(live_server, client: Client, path: str, query: dict):
    """The preview page at `path` as a browser gets it, and a function that posts its
    confirm form as that browser would (session cookie, CSRF cookie and field)."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    session = client.cookies["sessionid"].value
    url = live_server.url + path
    get = urllib.request.Request(
        url + "?" + urllib.parse.urlencode(query), headers={"Cookie": f"sessionid={session}"}
    )
    with opener.open(get, timeout=60) as response:
        html = response.read().decode()
    csrf = {c.name: c.value for c in jar}["csrftoken"]
    field = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    form = {**confirm_form(html), "csrfmiddlewaretoken": field, "reason": "idempotency"}

    def confirm() -> int:
        status, _ = send(
            url,
            body=urllib.parse.urlencode(form, doseq=True).encode(),
            headers={
                "Cookie": f"sessionid={session}; csrftoken={csrf}",
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
        return status

    return confirm


@pytest.mark.parametrize("kind", KINDS)
def test_web_one_task_a_form_submitted_again_and_at_once_sends_once(
    kind, operator, receiver, live_server
):
    pks = [Task.objects.get(task_id=f"task:i{n}").pk for n in range(TASKS)]
    confirm = browser(live_server, operator, reverse("web:task-action", args=[pks[0], kind]), {})
    assert [confirm(), confirm()] == [302, 302]
    assert at_once(PARALLEL, confirm) == [302] * PARALLEL
    fresh = browser(live_server, operator, reverse("web:task-action", args=[pks[1], kind]), {})
    assert at_once(PARALLEL, fresh) == [302] * PARALLEL
    assert Action.objects.count() == TASKS
    assert sent(receiver, kind) == {"task:i0": 1, "task:i1": 1}


@pytest.mark.parametrize("kind", KINDS)
def test_web_bulk_a_form_submitted_again_and_at_once_sends_once(
    kind, operator, receiver, live_server
):
    query = {"kind": kind, "scope": "matching", "q": "Idem"}
    confirm = browser(live_server, operator, reverse("web:bulk-action"), query)
    assert [confirm(), confirm()] == [302, 302]
    assert at_once(PARALLEL, confirm) == [302] * PARALLEL
    assert Action.objects.count() == TASKS
    assert sent(receiver, kind) == {f"task:i{n}": 1 for n in range(TASKS)}


def test_web_bulk_a_fresh_form_submitted_at_once_sends_once(operator, receiver, live_server):
    query = {"kind": "continue", "scope": "matching", "q": "Idem"}
    confirm = browser(live_server, operator, reverse("web:bulk-action"), query)
    assert at_once(PARALLEL, confirm) == [302] * PARALLEL
    assert Action.objects.count() == TASKS
    assert sent(receiver, "continue") == {f"task:i{n}": 1 for n in range(TASKS)}
