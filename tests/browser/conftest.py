"""Real-browser tests: the app runs as it does under `make run`, in separate processes.

`live_app` starts daphne (serving `supervisor.asgi:application`) and one Celery worker
with embedded beat, both on the pytest test database, once for this folder. Tests use
the database through `django_db(transaction=True)`, so what they write is committed and
the app's processes see it; the flush after each test empties it again.

Chromium is Debian's (/usr/bin/chromium, or SUPERVISOR_CHROMIUM), driven by Playwright.
Without it these tests fail in CI (CI=true) and skip, saying why, elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission

from tests.support.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    INIT_SCRIPT,
    PASSWORD,
    VIEWPORT,
    LiveApp,
    free_port,
    missing_chromium,
    start_daphne,
    stop,
)
from tests.support.workers import celery_worker, purge_broker


def pytest_collection_modifyitems(config, items):
    # Every test of this folder drives a real Chromium: `make check` leaves them out.
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.e2e)


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
        web, log = start_daphne(port)
        try:
            yield LiveApp(f"http://127.0.0.1:{port}", web, worker, log)
        finally:
            stop(web)


@pytest.fixture(scope="package")
def browser():
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing_chromium(f"no Chromium at {CHROMIUM}")
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
