"""Rate limits: failed log-ins per address and account, ingest requests per token."""

import json
import socket
import sys
import threading
from contextlib import closing

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_login_failed
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from supervisor import rate_limit
from supervisor.core.access.sources import do_create_source
from supervisor.core.models import IngestedEvent
from supervisor.rate_limit import Rate
from tests.test_web_server_log_ins import Browser

LIMITS = {
    "ingest": ("SUPERVISOR_INGEST_RATE", "3/60"),
    "login": ("SUPERVISOR_LOGIN_RATE", "3/300"),
    "login_address": ("SUPERVISOR_LOGIN_ADDRESS_RATE", "5/300"),
}


# --- the window --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, rate",
    [("600/60", Rate(600, 60)), ("5/0.5", Rate(5, 0.5)), ("0", None), ("", None)],
)
def test_a_rate_is_read_as_requests_per_seconds(text, rate):
    assert Rate.parse(text, "X") == rate


@pytest.mark.parametrize("text", ["600", "a/60", "0/60", "10/0", "10/-1", "1/2/3"])
def test_a_bad_rate_names_the_variable_and_the_form(text):
    with pytest.raises(ImproperlyConfigured, match=r"SUPERVISOR_INGEST_RATE=.*REQUESTS/SECONDS"):
        Rate.parse(text, "SUPERVISOR_INGEST_RATE")


def test_the_window_slides_instead_of_resetting_at_its_edge():
    rate = Rate(4, 10)
    start = 1_000_000_000.0  # the start of a window
    for _ in range(4):
        assert rate_limit.take("t", "k", rate, now=start + 9.1) == 0
    # Full: the fifth waits, at the next window's start and until the four are 10 s old.
    assert rate_limit.wait("t", "k", rate, now=start + 9.1) > 0
    assert rate_limit.wait("t", "k", rate, now=start + 10.1) > 0
    seconds = rate_limit.wait("t", "k", rate, now=start + 12.6)
    assert seconds == 7  # the four leave the window at 19.1 s, counted by the slice
    assert rate_limit.wait("t", "k", rate, now=start + 19.6) == 0
    assert rate_limit.wait("t", "other", rate, now=start + 9.1) == 0


def test_no_more_than_the_limit_passes_in_any_window():
    # The four at a window's end still count, whole, a quarter into the next: the old
    # weighting (their count times the window's share left) let one more through.
    rate = Rate(4, 10)
    start = 1_000_000_000.0
    passed = [rate_limit.take("t", "k", rate, now=start + 9.9) for _ in range(4)]
    passed += [rate_limit.take("t", "k", rate, now=start + 10 + t) for t in (2.5, 5, 7.5, 9.8)]
    assert passed.count(0) == 4


def test_a_refused_request_is_not_counted():
    rate = Rate(2, 10)
    start = 1_000_000_000.0
    for _ in range(2):
        rate_limit.take("t", "k", rate, now=start + 1.1)
    assert [rate_limit.take("t", "k", rate, now=start + 5.1) > 0 for _ in range(5)] == [True] * 5
    # The two leave the window at 11.33 s; the refusals after them weigh nothing.
    assert rate_limit.take("t", "k", rate, now=start + 11.5) == 0


def test_parallel_clients_pass_no_more_than_the_limit():
    # Threads sharing the cache the settings name: locmem on SQLite runs, Redis on the
    # service run. A short switch interval makes locmem's threads interleave too.
    rate, clients, tries = Rate(50, 60), 8, 20
    ready = threading.Barrier(clients)
    passed = []

    def client():
        ready.wait()
        passed.extend(rate_limit.take("ingest", "parallel", rate) == 0 for _ in range(tries))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=client) for _ in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert len(passed) == clients * tries
    assert passed.count(True) == rate.limit


def test_no_rate_never_limits():
    for _ in range(50):
        assert rate_limit.take("t", "k", None) == 0


# --- log-in ------------------------------------------------------------------------------


@pytest.fixture
def ann(db):
    return get_user_model().objects.create_user("ann", password="right-password-1")


def _log_in(client, username, password, address="10.0.0.1", forwarded=None):
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    return client.post(
        "/login/",
        {"username": username, "password": password},
        REMOTE_ADDR=address,
        headers=headers,
    )


@override_settings(SUPERVISOR_RATE_LIMITS=LIMITS)
def test_failed_log_ins_are_limited_per_address_and_account(client, ann):
    for _ in range(3):
        assert _log_in(client, "ann", "wrong").status_code == 200
    refused = _log_in(client, "ann", "right-password-1")
    assert refused.status_code == 429
    # Past the window's end by the share of it the last failures take to fade.
    assert 0 < int(refused["Retry-After"]) <= 300 + 300 / 3
    assert b"Too many failed log-ins" in refused.content
    assert "_auth_user_id" not in client.session  # the right password did not pass
    # Another address, or another account from this one, is not refused.
    assert _log_in(client, "ann", "right-password-1", address="10.0.0.2").status_code == 302
    assert _log_in(client, "bob", "wrong").status_code == 200


@override_settings(SUPERVISOR_RATE_LIMITS=LIMITS)
def test_spellings_of_one_account_count_as_that_account(client, ann):
    # Django logs in with the NFKC form of the name: "ａｎｎ" (full width) is ann.
    for spelling in ["\uff41\uff4e\uff4e", "\uff41nn", " a\uff4en "]:
        assert _log_in(client, spelling, "wrong").status_code == 200
    assert _log_in(client, "ann", "right-password-1").status_code == 429
    assert _log_in(client, "\uff41\uff4e\uff4e", "right-password-1").status_code == 429
    assert "_auth_user_id" not in client.session


@override_settings(SUPERVISOR_RATE_LIMITS=LIMITS)
def test_names_differing_in_case_are_two_accounts_counted_apart(client, ann):
    # Django tells Ann from ann (a user may hold each name): Ann's failures are Ann's.
    for _ in range(3):
        assert _log_in(client, "Ann", "wrong").status_code == 200
    assert _log_in(client, "ann", "right-password-1").status_code == 302


@override_settings(SUPERVISOR_RATE_LIMITS=LIMITS)
def test_an_address_trying_many_accounts_is_limited(client, ann):
    for name in ["a", "b", "c", "d", "e"]:
        assert _log_in(client, name, "wrong").status_code == 200
    assert _log_in(client, "ann", "right-password-1").status_code == 429


@override_settings(SUPERVISOR_RATE_LIMITS=LIMITS)
def test_a_try_refused_under_one_limit_is_not_counted_under_the_other(client, ann):
    # ann's limit (3) refuses her fourth and fifth tries: they are not counted against the
    # address either (5), which lets two more accounts fail from it, and then no more.
    statuses = [_log_in(client, "ann", "wrong").status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 429, 429]
    assert [_log_in(client, name, "wrong").status_code for name in "bcd"] == [200, 200, 429]


@override_settings(SUPERVISOR_RATE_LIMITS=LIMITS)
def test_successful_log_ins_are_not_counted(client, ann):
    for _ in range(6):
        assert _log_in(client, "ann", "right-password-1").status_code == 302
        client.logout()


@override_settings(SUPERVISOR_RATE_LIMITS=LIMITS, SUPERVISOR_TRUSTED_PROXIES="")
def test_without_a_trusted_proxy_a_rotated_x_forwarded_for_is_ignored(client, ann):
    statuses = [
        _log_in(client, "ann", "wrong", forwarded=f"203.0.113.{n}").status_code for n in range(5)
    ]
    assert statuses == [200, 200, 200, 429, 429]


@pytest.mark.parametrize("proxies", ["1", "10.0.0.1"])
def test_behind_a_trusted_proxy_the_limit_keys_on_the_address_it_saw(client, ann, proxies):
    # The proxy (10.0.0.1) appends the client's address to what the client sent.
    with override_settings(SUPERVISOR_RATE_LIMITS=LIMITS, SUPERVISOR_TRUSTED_PROXIES=proxies):
        statuses = [
            _log_in(client, "ann", "wrong", forwarded=f"6.6.6.{n}, 203.0.113.9").status_code
            for n in range(5)
        ]
        assert statuses == [200, 200, 200, 429, 429]
        # Another client behind the same proxy is not refused for it.
        other = _log_in(client, "ann", "right-password-1", forwarded="6.6.6.6, 203.0.113.10")
        assert other.status_code == 302


@override_settings(SUPERVISOR_RATE_LIMITS=LIMITS, SUPERVISOR_TRUSTED_PROXIES="10.0.0.1")
def test_a_peer_that_is_not_a_listed_proxy_is_the_client_whatever_it_forwards(client, ann):
    statuses = [
        _log_in(client, "ann", "wrong", address="198.51.100.4", forwarded=f"203.0.113.{n}")
        for n in range(5)
    ]
    assert [s.status_code for s in statuses] == [200, 200, 200, 429, 429]


@pytest.mark.parametrize("account", ["ann", "nobody"])  # a wrong password, an unknown name
def test_parallel_wrong_passwords_check_no_more_than_the_limit(live_server, account):
    # Twelve browsers send a wrong password at once: the three the limit allows are
    # checked, the nine others are refused without their password being looked at.
    checked = []

    def counted(sender, credentials, **kwargs):
        checked.append(credentials["username"])

    user_login_failed.connect(counted, dispatch_uid="count-checks")
    hashers = ["tests.support.passwords.SlowPasswordHasher"]
    # Room for all twelve checks at once: only the limit may hold them back here.
    room = {"SUPERVISOR_PASSWORD_CHECKS": 12, "PASSWORD_HASHERS": hashers}
    try:
        with override_settings(SUPERVISOR_RATE_LIMITS=LIMITS, **room):
            get_user_model().objects.create_user("ann", password="right-password-1")
            browsers = [Browser(live_server.url + "/login/") for _ in range(12)]
            ready = threading.Barrier(len(browsers))
            statuses = []

            def guess(browser):
                ready.wait()
                statuses.append(browser.log_in(account, "wrong", forwarded=""))

            threads = [threading.Thread(target=guess, args=(b,)) for b in browsers]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        user_login_failed.disconnect(dispatch_uid="count-checks")
    assert len(checked) == 3, statuses
    assert sorted(statuses) == [200] * 3 + [429] * 9


# --- ingest ------------------------------------------------------------------------------


def _event(number):
    return {
        "id": f"e{number}",
        "type": "task.delegated",
        "at": "2026-11-05T22:40:00Z",
        "data": {
            "task": f"task:{number}",
            "parent_thread": "thread:p",
            "child_thread": f"thread:c{number}",
            "title": "Port",
            "mode": "async",
        },
    }


def _post(client, token, number):
    return client.post(
        "/api/v1/events",
        json.dumps({"events": [_event(number)]}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )


@override_settings(SUPERVISOR_RATE_LIMITS=LIMITS)
def test_ingest_is_limited_per_token_with_a_clear_429(client, db):
    source, token = do_create_source("busy")
    _, other = do_create_source("calm")
    assert [_post(client, token, n).status_code for n in range(3)] == [200, 200, 200]
    refused = _post(client, token, 3)
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60 + 60 / 3
    error = refused.json()["error"]
    assert "'busy'" in error and "3 requests in 60 s" in error
    # The refused batch was not applied; another source's token still passes.
    assert IngestedEvent.objects.filter(source=source).count() == 3
    assert _post(client, other, 3).status_code == 200


def _closed_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_cache_does_not_refuse_anything(client, db, caplog):
    unreachable = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{_closed_port()}/0",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    _, token = do_create_source("busy")
    with override_settings(CACHES=unreachable, SUPERVISOR_RATE_LIMITS=LIMITS):
        statuses = [_post(client, token, n).status_code for n in range(5)]
    assert statuses == [200] * 5
    assert "the cache is unreachable" in caplog.text


def test_a_bad_rate_or_cache_is_named_by_the_system_check():
    from supervisor.checks import check_supervisor_settings

    bad = {**LIMITS, "login": ("SUPERVISOR_LOGIN_RATE", "five")}
    with override_settings(SUPERVISOR_RATE_LIMITS=bad, CACHE_URL="memcached://h:11211"):
        problems = {p.id: p.msg for p in check_supervisor_settings(None)}
    assert "SUPERVISOR_LOGIN_RATE='five'" in problems["supervisor.E006"]
    assert "CACHE_URL must be redis://" in problems["supervisor.E007"]


@pytest.mark.parametrize("value", ["", "0", "2", "127.0.0.1, ::1", "10.0.0.0/8"])
def test_a_good_trusted_proxies_value_passes_the_system_check(value):
    from supervisor.checks import check_supervisor_settings

    with override_settings(SUPERVISOR_TRUSTED_PROXIES=value):
        assert "supervisor.E008" not in {p.id for p in check_supervisor_settings(None)}


def test_a_bad_trusted_proxies_value_is_named_by_the_system_check():
    from supervisor.checks import check_supervisor_settings

    with override_settings(SUPERVISOR_TRUSTED_PROXIES="127.0.0.1, proxy.example.com"):
        problems = {p.id: p.msg for p in check_supervisor_settings(None)}
    message = problems["supervisor.E008"]
    assert "SUPERVISOR_TRUSTED_PROXIES='127.0.0.1, proxy.example.com'" in message
    assert "'proxy.example.com' is not an IP address or network" in message
