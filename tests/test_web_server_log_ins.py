"""Failed log-ins through the web server as it is deployed (the Procfile's and the systemd
unit's Daphne command lines, in their own process): a client that writes a new
X-Forwarded-For on every try still meets the limit, with no proxy configured and behind
one trusted proxy (the test plays the proxy, appending the client's address)."""

import pytest

from tests.support.web_server import Browser, Server

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(
    "where, proxies, forwarded",
    [
        ("Procfile", "", "203.0.113.{n}"),  # no proxy: every try names another address
        ("Procfile", "1", "6.6.6.{n}, 203.0.113.9"),  # the client's spoof, then the proxy's
        ("systemd", "127.0.0.1", "6.6.6.{n}, 203.0.113.9"),
    ],
)
def test_rotating_x_forwarded_for_meets_the_failed_log_in_limit(where, proxies, forwarded):
    server = Server(where, proxies)
    try:
        client = Browser(server.url)
        # Another account and another X-Forwarded-For on each try: only the limit per
        # address (5) can stop it, and only if the address is the real one.
        statuses = [client.log_in(f"who-{n}", "wrong", forwarded.format(n=n)) for n in range(7)]
        assert statuses == [200] * 5 + [429] * 2, server.log.read_text()[-2000:]
        if proxies:  # another client behind the same proxy is not refused for it
            assert client.log_in("who-else", "wrong", "6.6.6.6, 203.0.113.10") == 200
    finally:
        server.stop()
