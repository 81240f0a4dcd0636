"""An alert's links point at the server that sent it: without SUPERVISOR_BASE_URL they
take the web server's own HOST and PORT."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LINKS = (
    "import django; django.setup(); "
    "from supervisor.core.models import Flag; "
    "from supervisor.notify.content import task_url; "
    "print(task_url(Flag(task_id=None)))"
)


def alert_link(tmp_path, **env) -> str:
    """The link an alert about a thread flag carries, in a process started with ENV."""
    base = {
        "PATH": os.environ["PATH"],
        "SUPERVISOR_VAR_DIR": str(tmp_path / "var"),
        "DJANGO_SETTINGS_MODULE": "supervisor.settings",
    }
    done = subprocess.run(
        [sys.executable, "-c", LINKS],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_alert_links_to_the_port_the_server_runs_on(tmp_path):
    assert alert_link(tmp_path, PORT="8720") == "http://127.0.0.1:8720/"


def test_an_alert_links_to_the_host_the_server_binds(tmp_path):
    assert alert_link(tmp_path, HOST="localhost", PORT="8721") == "http://localhost:8721/"


def test_a_server_on_every_address_is_linked_on_the_loopback(tmp_path):
    assert alert_link(tmp_path, HOST="0.0.0.0", PORT="8722") == "http://127.0.0.1:8722/"
    assert alert_link(tmp_path, HOST="::", PORT="8722") == "http://[::1]:8722/"


def test_a_set_base_url_wins_over_host_and_port(tmp_path):
    link = alert_link(tmp_path, PORT="8720", SUPERVISOR_BASE_URL="https://supervisor.example.com/")
    assert link == "https://supervisor.example.com/"
