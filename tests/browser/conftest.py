"""Real-browser tests: the app runs as it does under `make run`, in separate processes.

`live_app` starts daphne (serving `supervisor.asgi:application`) and one Celery worker
with embedded beat, both on the pytest test database, once for this folder. Tests use
the database through `django_db(transaction=True)`, so what they write is committed and
the app's processes see it; the flush after each test empties it again.

Chromium is Debian's (/usr/bin/chromium, or SUPERVISOR_CHROMIUM), driven by Playwright.
Without it these tests fail in CI (CI=true) and skip, saying why, elsewhere.
"""

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
from django.contrib.auth.models import Permission

from supervisor.core.models import Flag, Task, Thread
from supervisor.ops.processes import web_command
from tests.conftest import CONTRACT_SCENARIOS, load_scenario
from tests.workers import ROOT, celery_worker, purge_broker, test_database_env, wait_for

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


def _missing_chromium(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"browser tests must run in CI: {reason}", pytrace=False)
    pytest.skip(f"{reason} (install Debian's chromium; in CI this fails)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(process: subprocess.Popen) -> None:
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


def _start_daphne(port: int) -> tuple[subprocess.Popen, Path]:
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
            _stop(web)
            raise RuntimeError(f"daphne did not start:\n{log.read_text()}")
        time.sleep(0.2)


@pytest.fixture(scope="package")
def live_app(django_db_setup, tmp_path_factory):
    """daphne + a Celery worker with embedded beat (sweep every 0.5 s) on the test DB."""
    purge_broker()
    schedule = tmp_path_factory.mktemp("beat") / "schedule"
    port = free_port()
    # The worker is told the web server's port, as `make run` tells its processes: the
    # links of the alerts it sends point there.
    with celery_worker(
        "--beat",
        "--schedule",
        str(schedule),
        env={"SUPERVISOR_SWEEP_INTERVAL": "0.5", "PORT": str(port)},
    ) as worker:
        web, log = _start_daphne(port)
        try:
            yield LiveApp(f"http://127.0.0.1:{port}", web, worker, log)
        finally:
            _stop(web)


@pytest.fixture(scope="package")
def browser():
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        _missing_chromium(f"no Chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop set as running in this thread, which
    # Django takes for async code; the tests' ORM calls are plain synchronous ones.
    unsafe = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                yield browser
            finally:
                browser.close()
    finally:
        if unsafe is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = unsafe


@pytest.fixture
def new_page(browser, live_app):
    """`new_page(scheme, bypass_csp=False, timezone_id="UTC", permissions=())`: a page in
    a fresh context (1280×800)."""
    contexts = []

    def make(
        scheme: str = "light",
        *,
        bypass_csp: bool = False,
        timezone_id: str = "UTC",
        permissions=(),
    ):
        context = browser.new_context(
            base_url=live_app.url,
            viewport=VIEWPORT,
            color_scheme=scheme,
            bypass_csp=bypass_csp,
            reduced_motion="reduce",
            locale="en-US",
            timezone_id=timezone_id,
            permissions=list(permissions),
        )
        context.set_default_timeout(30_000)
        context.add_init_script(INIT_SCRIPT)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def acting_user(transactional_db, django_user_model):
    user = django_user_model.objects.create_user("operator", password=PASSWORD)
    user.user_permissions.add(Permission.objects.get(codename="act"))
    return user


@pytest.fixture
def admin_user(transactional_db, django_user_model):
    from supervisor.core.access.roles import ADMIN, do_set_role

    user = django_user_model.objects.create_user("admin", password=PASSWORD)
    do_set_role(user, ADMIN)
    return user


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
