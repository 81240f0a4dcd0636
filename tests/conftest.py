import os
import time
from datetime import datetime

import pytest
from django.conf import settings as django_settings
from django.test import override_settings
from hypothesis import settings as hypothesis_settings

from supervisor.core.access.sources import do_create_source
from supervisor.core.contract.connectors import register
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.notify.models import Channel, Route
from tests.support.factories import make_tasks
from tests.support.simulator.connector import SimulatorConnector

# The in-process simulator acts for the tests' sources; the product does not offer it.
register(SimulatorConnector)

# The servers the tests start log in at a machine's pace, with full-strength password
# hashes: their password checks may take a whole core, not the quarter a web process
# gives them under a flood (tests/web/test_password_checks.py tests that share).
os.environ.setdefault("SUPERVISOR_PASSWORD_CHECK_SHARE", "1")

# CI gets a time budget; local runs may dig deeper with HYPOTHESIS_PROFILE=dev.
hypothesis_settings.register_profile("ci", max_examples=25, deadline=None)
hypothesis_settings.register_profile("dev", max_examples=200, deadline=None)
hypothesis_settings.register_profile("default", max_examples=25, deadline=None)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session", autouse=True)
def _flush_survives_deadlocks():
    """Tests with live workers flush the database while a beat job (sweep, alerts, T3
    follower) may be mid-transaction; PostgreSQL then breaks the deadlock by failing one
    side, sometimes the flush. The flush tries again instead of failing the test."""
    from django.core.management.base import CommandError
    from django.core.management.commands import flush

    original = flush.Command.handle

    def handle(self, *args, **options):
        for attempt in range(5):
            try:
                return original(self, *args, **options)
            except CommandError as exc:
                if "deadlock detected" not in str(exc.__cause__ or "") or attempt == 4:
                    raise
                time.sleep(0.2)

    flush.Command.handle = handle
    yield
    flush.Command.handle = original


@pytest.fixture(autouse=True)
def _quick_password_hashes(request):
    """Passwords hashed in this process hash quickly, except in tests whose writes are
    committed (where an app process of its own may log in: it would re-hash them at its
    own strength on the first log-in, a write the test did not make)."""
    marker = request.node.get_closest_marker("django_db")
    committed = marker is not None and (
        marker.kwargs.get("transaction") or (marker.args and marker.args[0])
    )
    if committed or {"transactional_db", "live_server"} & set(request.fixturenames):
        yield
        return
    # Not pytest-django's `settings` fixture: some tests have a parameter of that name.
    quick = ["tests.support.passwords.QuickPasswordHasher", *django_settings.PASSWORD_HASHERS]
    with override_settings(PASSWORD_HASHERS=quick):
        yield


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Rate-limit counters live in the cache, which outlives a test: start each at zero."""
    from django.core.cache import cache

    cache.clear()
    yield


SERVICES = bool(os.environ.get("DATABASE_URL") and os.environ.get("CELERY_BROKER_URL"))


# Run last: they follow the real T3 plays that the background player is still making
# (tests/support/t3/plays.py); at the end of the session nothing waits for it.
LAST = (
    "tests/connectors/t3code/test_real_failures.py",
    "tests/connectors/t3code/test_real_server.py",
)


def pytest_collection_finish(session):
    # The real T3 plays start as the session does, in the background, when a test will
    # read them: once for every worker of the run (the player holds a lock).
    if any("real_t3" in item.keywords for item in session.items):
        from tests.support.t3.plays import start_player

        start_player()


def pytest_collection_modifyitems(config, items):
    # Service tests skip only when the variables are unset, never because a server is down.
    skip = pytest.mark.skip(reason="needs DATABASE_URL and CELERY_BROKER_URL")
    for item in items:
        if "services" in item.keywords and not SERVICES:
            item.add_marker(skip)
    items.sort(key=lambda item: item.nodeid.startswith(LAST))  # stable: the rest keep order


def pytest_sessionfinish(session, exitstatus):
    # In CI's service run a skipped test is a failure, whatever the reason.
    if os.environ.get("SUPERVISOR_REQUIRE_SERVICES") and exitstatus == 0:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        skipped = reporter.stats.get("skipped", []) if reporter else []
        if skipped:
            reporter.write_line(f"{len(skipped)} test(s) skipped in the service run: failing")
            session.exitstatus = 1


@pytest.fixture
def source(db):
    source, token = do_create_source("orchestrator", scopes="ingest,read,act")
    source.token = token
    return source


@pytest.fixture
def user(db, django_user_model):
    return django_user_model.objects.create_user("op", password="pw-for-tests")


# The outbound guard's tests (tests/support/outbound.py): every connect recorded, and the
# setting that lets Supervisor send to loopback and private addresses, each way.
@pytest.fixture
def connects(monkeypatch):
    from tests.support.outbound import Connects

    return Connects(monkeypatch)


@pytest.fixture
def allow_private(settings):
    settings.SUPERVISOR_OUTBOUND_ALLOW_PRIVATE = True


@pytest.fixture
def refuse_private(settings):
    settings.SUPERVISOR_OUTBOUND_ALLOW_PRIVATE = False


@pytest.fixture
def silent_source(source):
    """An open source_silent flag and a delegation_rejected flag on a thread."""
    silent = do_open_flag(
        source.namespace_id,
        Finding(
            "source_silent",
            "source",
            source.name,
            {"events": [], "text": f"Source {source.name} has sent nothing since 09:00."},
        ),
        datetime.fromisoformat("2026-11-05T23:00:00+00:00"),
    )
    on_thread = do_open_flag(
        source.namespace_id,
        Finding(
            "delegation_rejected",
            "thread",
            "thread:lead",
            {"events": ["x1"], "text": "1 delegation(s) on this thread were refused."},
        ),
        datetime.fromisoformat("2026-11-05T23:01:00+00:00"),
    )
    return silent, on_thread


@pytest.fixture
def tasks(source):
    make_tasks(source, 50)
    return source


@pytest.fixture
def two_channels(db):
    """Two channels, each with a route for every flag (30 s window)."""
    first = Channel.objects.create(name="ops-json", kind="apprise", target="json://127.0.0.1:9/x")
    second = Channel.objects.create(name="ops-ntfy", kind="apprise", target="ntfy://127.0.0.1:9/t")
    for channel in (first, second):
        Route.objects.create(channel=channel, group_window=30)
    return first, second
