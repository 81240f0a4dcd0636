"""Log-ins beside ingest: a password being checked holds no pooled connection (on
PostgreSQL's pool), and no more checks run at once in a web process than it allows (over
that, a log-in is refused at once, 503 with Retry-After, without the database).

Before, forty wrong-password log-ins each held a pooled connection for the 0.6 s of CPU
their hash took, and ingest answered 503: no connection within the pool's timeout.
"""

import json
import threading
import time
import urllib.error
import urllib.request

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.db import connection
from django.test import override_settings

from supervisor.core.access.sources import do_create_source
from supervisor.web import password_checks
from tests.test_web_server_log_ins import Browser

NO_LIMITS = {  # many addresses, as a spread-out attack has: the failed-log-in limit is no help
    "ingest": ("SUPERVISOR_INGEST_RATE", "0"),
    "login": ("SUPERVISOR_LOGIN_RATE", "0"),
    "login_address": ("SUPERVISOR_LOGIN_ADDRESS_RATE", "0"),
}


class Gate:
    """Holds every password hash until it opens."""

    def __init__(self):
        self.opened = threading.Event()
        self.entered = 0
        self.lock = threading.Lock()

    def enter(self):
        with self.lock:
            self.entered += 1
        self.opened.wait(timeout=60)


def taken() -> int:
    """Connections taken from the pool of this process (the live server's too)."""
    stats = connection.pool.get_stats()
    return stats["pool_size"] - stats["pool_available"]


GATE = Gate()


class HeldPasswordHasher(PBKDF2PasswordHasher):
    """A quick PBKDF2 whose every hash waits at the gate: the log-ins are all in the middle
    of their password check while ingest is asked for."""

    algorithm = "held_pbkdf2_for_tests"
    iterations = 1000

    def encode(self, password, salt, iterations=None):
        GATE.enter()
        return super().encode(password, salt, iterations)


def _ingest(url: str, token: str) -> int:
    event = {
        "id": "e1",
        "type": "task.delegated",
        "at": "2026-11-05T22:40:00Z",
        "data": {
            "task": "task:1",
            "parent_thread": "thread:p",
            "child_thread": "thread:c1",
            "title": "Port",
            "mode": "async",
        },
    }
    request = urllib.request.Request(
        url + "/api/v1/events",
        data=json.dumps({"events": [event]}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as refused:
        return refused.code


@pytest.mark.services  # the pool is PostgreSQL's
def test_log_ins_being_checked_leave_the_pool_to_ingest(live_server):
    global GATE
    GATE = Gate()
    _, token = do_create_source("busy")
    pool_size = connection.settings_dict["OPTIONS"]["pool"]["max_size"]
    answers: list[int] = []
    hashers = ["tests.web.test_password_checks.HeldPasswordHasher"]
    with override_settings(SUPERVISOR_RATE_LIMITS=NO_LIMITS, PASSWORD_HASHERS=hashers):
        browsers = [Browser(live_server.url + "/login/") for _ in range(pool_size)]
        before = taken()  # this test's own connection

        def guess(n, browser):  # unknown names: Django hashes the password all the same
            answers.append(browser.log_in(f"who-{n}", "wrong", forwarded=""))

        threads = [threading.Thread(target=guess, args=nb) for nb in enumerate(browsers)]
        for thread in threads:
            thread.start()
        try:
            # Every log-in is either held in its password hash or already answered.
            deadline = time.monotonic() + 30
            while GATE.entered + len(answers) < len(browsers):
                assert time.monotonic() < deadline, (GATE.entered, answers)
                time.sleep(0.05)
            hashing, during = GATE.entered, taken()
            status = _ingest(live_server.url, token)
        finally:
            GATE.opened.set()
            for thread in threads:
                thread.join()
    assert status == 200, f"ingest answered {status} while {hashing} log-ins were hashing"
    assert during == before, f"{during - before} connections held by {hashing} password hashes"
    # The ones past the process's bound were refused without being checked.
    assert 1 <= hashing < pool_size
    assert sorted(answers) == [200] * hashing + [503] * (pool_size - hashing)


LIMITS = {
    "ingest": ("SUPERVISOR_INGEST_RATE", "0"),
    "login": ("SUPERVISOR_LOGIN_RATE", "3/300"),
    "login_address": ("SUPERVISOR_LOGIN_ADDRESS_RATE", "5/300"),
}


@override_settings(SUPERVISOR_PASSWORD_CHECKS=1, SUPERVISOR_RATE_LIMITS=LIMITS)
def test_a_log_in_past_the_process_checks_is_refused_at_once_and_not_counted(
    client, db, django_assert_num_queries
):
    get_user_model().objects.create_user("ann", password="right-password-1")
    form = {"username": "ann", "password": "wrong"}
    with password_checks.slot() as free:  # another log-in's password is being checked
        assert free
        for _ in range(4):
            with django_assert_num_queries(0):
                refused = client.post("/login/", form)
            assert refused.status_code == 503
            assert refused["Retry-After"] == "1"
            assert b"Too many log-ins are being checked just now" in refused.content
    # The refusals were not failures: ann still has her three tries, then the limit.
    statuses = [client.post("/login/", form).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    assert client.post("/login/", {**form, "password": "right-password-1"}).status_code == 429


def test_a_session_from_before_the_password_backend_stays_logged_in(client, db):
    """Sessions logged in before PasswordBackend came name Django's ModelBackend: the
    upgrade does not log their holders out."""
    ann = get_user_model().objects.create_user("ann", password="right-password-1")
    client.force_login(ann, backend="django.contrib.auth.backends.ModelBackend")
    assert client.get("/").status_code == 200
    assert client.get("/").wsgi_request.user == ann


@override_settings(SUPERVISOR_RATE_LIMITS=NO_LIMITS)
def test_a_wrong_password_is_checked_once_and_never_by_django_s_backend(client, db, monkeypatch):
    from django.contrib.auth.backends import ModelBackend

    def refuse(*args, **kwargs):
        raise AssertionError("ModelBackend checked a password, its connection held")

    monkeypatch.setattr(ModelBackend, "authenticate", refuse)
    get_user_model().objects.create_user("ann", password="right-password-1")
    for name in ("ann", "nobody"):
        answer = client.post("/login/", {"username": name, "password": "wrong"})
        assert answer.status_code == 200 and b"didn't match" in answer.content
    assert (
        client.post("/login/", {"username": "ann", "password": "right-password-1"}).status_code
        == 302
    )


async def _ask(app, method: str, path: str) -> tuple[int, dict, bytes]:
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"username=a&password=b", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": [], "query_string": b""}
    await app(scope, receive, send)
    start, body = sent[0], b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], dict(start["headers"]), body


@pytest.mark.asyncio
async def test_a_log_in_past_the_process_checks_is_refused_before_django():
    """The refusal costs no middleware, thread, cache or database: past the checks, a
    POST to the log-in page never reaches the application behind the gate."""
    reached = []

    async def django(scope, receive, send):
        reached.append((scope["method"], scope["path"]))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"django"})

    gate = password_checks.BusyGate(django)
    assert (await _ask(gate, "POST", "/login/"))[0] == 200  # a check is free
    with password_checks.slot() as free:  # another log-in's password is being checked
        assert free
        status, headers, body = await _ask(gate, "POST", "/login/")
        assert (status, headers[b"retry-after"]) == (503, b"1")
        assert b"Too many log-ins are being checked just now" in body
        assert (await _ask(gate, "GET", "/login/"))[0] == 200  # the page itself is served
        assert (await _ask(gate, "POST", "/api/v1/events"))[0] == 200  # and ingest is not gated
    assert (await _ask(gate, "POST", "/login/"))[0] == 200
    assert reached == [
        ("POST", "/login/"),
        ("GET", "/login/"),
        ("POST", "/api/v1/events"),
        ("POST", "/login/"),
    ]


def test_password_checks_keep_to_their_share_of_a_core(monkeypatch, settings):
    """A few log-ins at once pass; a flood's checks take at most the share of a core
    over time (past it, a log-in is refused as when every check is under way)."""
    now = [1000.0]
    monkeypatch.setattr(password_checks, "_clock", lambda: now[0])
    monkeypatch.setattr(password_checks, "_cpu_clock", lambda: now[0])  # all of it CPU
    settings.SUPERVISOR_PASSWORD_CHECK_SHARE = 0.25
    settings.SUPERVISOR_PASSWORD_CHECKS = 7  # a process's checks of their own, budget full

    def check(seconds: float) -> bool:
        with password_checks.slot() as free:
            if free:
                password_checks._hash(now.__setitem__, 0, now[0] + seconds)
        return free

    passed = 0
    while check(0.6):
        passed += 1
    # The burst's 2 s and a quarter of the 3 s they took: five checks, 0.4 s owed,
    # earned back in 1.6 s: a refused log-in is told to come back in 2.
    assert passed == 5 and password_checks.all_taken()
    assert password_checks.retry_after() == 2
    gate = password_checks.BusyGate(None)  # refuses before the application is needed
    status, headers, body = async_to_sync(_ask)(gate, "POST", "/login/")
    assert (status, headers[b"retry-after"]) == (503, b"2")
    assert b"Try again in 2 seconds" in body
    now[0] += 0.4 / 0.25 - 0.01  # the owed 0.4 s earned back at a quarter a second
    assert password_checks.all_taken()
    now[0] += 0.02
    assert not password_checks.all_taken() and check(0.6)
    # A flood's checks over a minute: at most its share of the minute, and the burst.
    started, checked = now[0], 0.0
    while now[0] < started + 60:
        if check(0.6):
            checked += 0.6
        else:
            now[0] += 0.1
    assert checked <= 60 * 0.25 + password_checks.BURST
    assert checked >= 60 * 0.25 - 0.6


def test_a_check_is_charged_its_cpu_not_its_wait_for_a_core(monkeypatch, settings):
    """At idle priority on a busy machine a check may wait seconds for a core; the wait
    costs no one anything, so it is not held against the log-ins after it (it was: a
    busy test run refused a fifth quick log-in with 503)."""
    now, cpu = [1000.0], [0.0]
    monkeypatch.setattr(password_checks, "_clock", lambda: now[0])
    monkeypatch.setattr(password_checks, "_cpu_clock", lambda: cpu[0])
    settings.SUPERVISOR_PASSWORD_CHECK_SHARE = 0.25
    settings.SUPERVISOR_PASSWORD_CHECKS = 8  # a process's checks of their own, budget full

    def waited_then_hashed():
        now[0] += 3.0  # three seconds before a core was free
        cpu[0] += 0.01  # a quick hash

    for _ in range(5):
        with password_checks.slot() as free:
            assert free
            password_checks._hash(waited_then_hashed)
    assert not password_checks.all_taken()
