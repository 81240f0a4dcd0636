"""The web server's access log, which Daphne writes itself rather than through Python
logging, carries no credential: an alert link's signed token is cut from its lines.
The server is started as `manage.py up` starts it, on a free loopback port."""

import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from datetime import UTC, datetime

import pytest

from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.notify.content import link_token
from supervisor.ops.processes import web_command
from tests.support import workers
from tests.support.factories import make_tasks
from tests.support.workers import ROOT, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_of(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


@pytest.fixture
def web(tmp_path):
    """The web server as `up` runs it; yields (base URL, its output file)."""
    port, log = free_port(), tmp_path / "web.log"
    env = {**os.environ, **workers.test_database_env(), "PYTHONUNBUFFERED": "1"}
    with log.open("w") as out:
        server = subprocess.Popen(
            web_command(sys.executable, "127.0.0.1", port, access_log=True),
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(
            lambda: server.poll() is not None or status_of(f"{url}/login/") == 200,
            timeout=60,
            what="the web server to answer",
        )
        assert server.poll() is None, log.read_text()
        yield url, log
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=15)


def test_an_alert_link_reaches_the_access_log_without_its_token(source, web):
    url, log = web
    make_tasks(source, 1)
    now = datetime.now(UTC)
    flag = do_open_flag(source.namespace_id, Finding("stale_result", "task", "task:t0"), now)
    token = link_token(flag.pk)
    assert status_of(f"{url}/alerts/ack/{token}/") == 200
    assert status_of(f"{url}/alerts/ack/{token}x/") == 403  # a bad signature: logged too

    def ack_lines() -> list[str]:
        return [line for line in log.read_text().splitlines() if '"GET /alerts/ack/' in line]

    lines = wait_for(lambda: len(ack_lines()) >= 2 and ack_lines(), what="both requests logged")
    assert [line.split('"')[1] for line in lines] == ["GET /alerts/ack/[redacted]/"] * 2
    assert [line.split('"')[2].split()[0] for line in lines] == ["200", "403"]
    output = log.read_text()
    assert token not in output and token.split(":")[0] not in output
