"""What the real-browser tests (tests/browser) share: Debian's Chromium and its arguments,
the app as `make run` runs it (daphne and one Celery worker with embedded beat, on the
test database), the seed data and how a page logs in and waits for its live socket."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings

from supervisor.core.models import Flag, Task, Thread
from supervisor.ops.processes import web_command
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario
from tests.support.workers import ROOT, test_database_env, wait_for

CHROMIUM = os.environ.get("SUPERVISOR_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 800}
SCHEMES = ("light", "dark")

SEED000_PATH = next(p for p in CONTRACT_SCENARIOS if p.name.startswith("seed000"))
SEED000 = load_scenario(SEED000_PATH)
RETRY_PORT = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
PARENT_THREAD = "thread:parent-release"
EXPECTED_OPEN = set(SEED000["expect_open"]["tasks"][RETRY_PORT])
GIVEN_TEXT = "Still running, waiting on the checks."
LATEST_TEXT = "All checks green, both reviews addressed. PR #812 is ready to merge."
PASSWORD = "pw-for-browser-tests"

# Set on every page before its own scripts run (an init script is not subject to the CSP):
# <html data-test-socket="open|closed"> follows the live socket, and every CSP violation
# the page reports is kept in window.__cspViolations.
INIT_SCRIPT = """
window.__cspViolations = [];
document.addEventListener("htmx:wsOpen", function () {
  document.documentElement.setAttribute("data-test-socket", "open");
});
document.addEventListener("htmx:wsClose", function () {
  document.documentElement.setAttribute("data-test-socket", "closed");
});
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI);
});
"""


def missing_chromium(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"browser tests must run in CI: {reason}", pytrace=False)
    pytest.skip(f"{reason} (install Debian's chromium; in CI this fails)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@dataclass
class LiveApp:
    url: str
    web: subprocess.Popen
    worker: subprocess.Popen
    web_log: Path

    def logs(self) -> str:
        return (
            f"--- daphne ---\n{self.web_log.read_text()[-4000:]}\n"
            f"--- worker ---\n{self.worker.log.read_text()[-4000:]}"
        )

    def post_events(self, token: str, events: list[dict]) -> dict:
        request = urllib.request.Request(
            f"{self.url}/api/v1/events",
            data=json.dumps({"events": events}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())


def start_daphne(port: int) -> tuple[subprocess.Popen, Path]:
    log = Path(settings.VAR_DIR) / f"daphne-{uuid.uuid4().hex[:8]}.log"
    command = web_command(sys.executable, "127.0.0.1", port)  # as `manage.py up` runs it
    env = {**os.environ, **test_database_env()}
    with log.open("w") as out:
        web = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2) as r:
                if r.status == 200:
                    return web, log
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if web.poll() is not None or time.monotonic() > deadline:
            stop(web)
            raise RuntimeError(f"daphne did not start:\n{log.read_text()}")
        time.sleep(0.2)


def log_in(page, user, next_path: str = "/") -> None:
    page.goto(f"/login/?next={next_path}")
    page.get_by_label("User name").fill(user.get_username())
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"**{next_path}")


def wait_for_socket(page) -> None:
    """Until the page's live socket is open (wait_for_function would need 'unsafe-eval')."""
    from playwright.sync_api import expect

    expect(page.locator("html")).to_have_attribute("data-test-socket", "open")


def open_kinds(task_id: str = RETRY_PORT) -> set[str]:
    return set(
        Flag.objects.filter(subject_id=task_id, state=Flag.OPEN).values_list("kind", flat=True)
    )


@dataclass
class Seeded:
    task_pk: int
    thread_pk: int
    open_flags: int


def seed(live_app: LiveApp, source) -> Seeded:
    """Post seed000 through the API and wait until the worker has opened its flags."""
    answer = live_app.post_events(source.token, SEED000["events"])
    assert answer["accepted"] == len(SEED000["events"]), answer
    try:
        wait_for(lambda: open_kinds() == EXPECTED_OPEN, what="seed000's flags to open")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{live_app.logs()}") from None
    return Seeded(
        task_pk=Task.objects.get(task_id=RETRY_PORT).pk,
        thread_pk=Thread.objects.get(thread_id=PARENT_THREAD).pk,
        open_flags=Flag.objects.filter(state=Flag.OPEN).count(),
    )


def page_paths(seeded: Seeded) -> dict[str, str]:
    return {
        "overview": "/",
        "list": "/tasks/",
        "detail": f"/tasks/{seeded.task_pk}/",
        "thread": f"/threads/{seeded.thread_pk}/",
    }


AXE = Path(__file__).resolve().parent.parent / "browser" / "vendor" / "axe-core" / "axe.min.js"
BLOCKING = {"serious", "critical"}
RUN_AXE = """async () => {
  const results = await axe.run(document, {resultTypes: ["violations"]});
  return results.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({
      target: n.target.join(" "), html: n.html.slice(0, 160), summary: n.failureSummary,
    })),
  }));
}"""


def describe(page_name: str, scheme: str, violations: list[dict]) -> list[str]:
    lines = []
    for v in violations:
        for node in v["nodes"]:
            lines.append(
                f"[{page_name}, {scheme}] {v['id']} ({v['impact']}): {v['help']}\n"
                f"    at {node['target']}: {node['html']}\n    {node['summary']}"
            )
    return lines
