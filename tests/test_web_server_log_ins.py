"""Failed log-ins through the web server as it is deployed (the Procfile's and the systemd
unit's Daphne command lines, in their own process): a client that writes a new
X-Forwarded-For on every try still meets the limit, with no proxy configured and behind
one trusted proxy (the test plays the proxy, appending the client's address)."""

import http.cookiejar
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from tests.support import workers

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LIMITS = {"SUPERVISOR_LOGIN_RATE": "3/300", "SUPERVISOR_LOGIN_ADDRESS_RATE": "5/300"}
# Where each deployment keeps the web server's command line.
DEPLOYED = {
    "Procfile": ("Procfile", "web:"),
    "systemd": ("deploy/systemd/supervisor-web.service", "ExecStart="),
}


def deployed_command(where: str, port: int) -> list[str]:
    """The web server's command line that `where` starts, on a loopback port of this test."""
    path, prefix = DEPLOYED[where]
    lines = (workers.ROOT / path).read_text().splitlines()
    line = next(x for x in lines if x.startswith(prefix)).removeprefix(prefix)
    argv = shlex.split(line)
    assert argv[1] == "-m" and "-b" in argv and "-p" in argv, argv  # python -m SERVER …
    argv[0] = sys.executable
    argv[argv.index("-b") + 1] = "127.0.0.1"
    argv[argv.index("-p") + 1] = str(port)
    return argv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, where: str, proxies: str):
        self.port = _free_port()
        self.log = Path(settings.VAR_DIR) / f"daphne-proxy-{uuid.uuid4().hex[:8]}.log"
        env = {
            **os.environ,
            **workers.test_database_env(),
            **LIMITS,
            "SUPERVISOR_TRUSTED_PROXIES": proxies,
        }
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                deployed_command(where, self.port),
                cwd=workers.ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.url = f"http://127.0.0.1:{self.port}/login/"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url, timeout=2):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"daphne did not start:\n{self.log.read_text()}") from None
                time.sleep(0.2)

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=15)


class Browser:
    """One client: its cookies and the log-in form's CSRF token."""

    def __init__(self, url: str):
        self.url = url
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with self.opener.open(url, timeout=10) as response:
            page = response.read().decode()
        self.csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)

    def log_in(self, username: str, password: str, forwarded: str) -> int:
        form = {"username": username, "password": password, "csrfmiddlewaretoken": self.csrf}
        request = urllib.request.Request(
            self.url,
            data=urllib.parse.urlencode(form).encode(),
            headers={"X-Forwarded-For": forwarded},
            method="POST",
        )
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as refused:
            return refused.code


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
