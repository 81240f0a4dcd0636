"""The dependency audit CI runs (.ci/audit-dependencies), against OSV and PyPI answers
served on loopback: it fails on a known vulnerability and names it."""

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "audit-dependencies"

LOCK = """
version = 1
[[package]]
name = "django"
version = "6.1.3"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "oldlib"
version = "1.0"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "supervisor"
version = "0.1.0"
source = { virtual = "." }
"""


class Index(BaseHTTPRequestHandler):
    """PyPI's JSON pages and OSV's batch API, as the test sets them."""

    pages: dict[str, dict] = {}
    osv: dict | None = None

    def do_GET(self):
        page = self.pages.get(self.path)
        self._answer(200 if page else 404, page or {"message": "Not Found"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.osv is None:
            self._answer(503, {})
            return
        names = [query["package"]["name"] for query in body["queries"]]
        self._answer(200, {"results": [self.osv.get(name, {}) for name in names]})

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def index(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    lock = tmp_path / "uv.lock"
    lock.write_text(LOCK)
    Index.pages, Index.osv = {}, None
    yield server, lock
    server.shutdown()


def audit(index):
    server, lock = index
    base = f"http://127.0.0.1:{server.server_address[1]}"
    return subprocess.run(
        [sys.executable, str(SCRIPT)],
        env={"AUDIT_LOCK": str(lock), "AUDIT_OSV_URL": f"{base}/osv", "AUDIT_PYPI_URL": base},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_osv_finding_a_vulnerability_fails_and_names_it(index):
    Index.osv = {"oldlib": {"vulns": [{"id": "GHSA-xxxx-0001"}]}}
    done = audit(index)
    assert done.returncode == 1
    assert "VULNERABLE oldlib 1.0: GHSA-xxxx-0001" in done.stderr
    assert "django" not in done.stderr


def test_without_osv_pypi_release_pages_are_read(index):
    Index.pages = {
        "/django/6.1.3/json": {"vulnerabilities": []},
        "/oldlib/1.0/json": {
            "vulnerabilities": [
                {"id": "PYSEC-1", "withdrawn": None},
                {"id": "PYSEC-2", "withdrawn": "2026-01-01"},
            ]
        },
    }
    done = audit(index)
    assert done.returncode == 1
    assert "VULNERABLE oldlib 1.0: PYSEC-1\n" in done.stderr  # the withdrawn one is not


def test_a_mirror_without_release_pages_checks_the_newest_and_lists_the_rest(index):
    Index.pages = {
        "/django/json": {"info": {"version": "6.1.3"}, "vulnerabilities": []},
        "/oldlib/json": {"info": {"version": "2.0"}, "vulnerabilities": [{"id": "X"}]},
    }
    done = audit(index)
    assert done.returncode == 0, done.stderr
    assert "PyPI: 1 of 2 locked packages checked" in done.stdout
    assert "not checked: oldlib 1.0 (newest is 2.0" in done.stdout
    assert "no known vulnerabilities" in done.stdout
