import json
import os
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.test import override_settings
from hypothesis import settings as hypothesis_settings

from supervisor.core.access.sources import do_create_source
from supervisor.core.contract.connectors import register
from tests.simulator.connector import SimulatorConnector

# The in-process simulator acts for the tests' sources; the product does not offer it.
register(SimulatorConnector)

# The servers the tests start log in at a machine's pace, with full-strength password
# hashes: their password checks may take a whole core, not the quarter a web process
# gives them under a flood (tests/test_log_ins_beside_ingest.py tests that share).
os.environ.setdefault("SUPERVISOR_PASSWORD_CHECK_SHARE", "1")

ROOT = Path(__file__).resolve().parent.parent
# The contract's scenarios, as the project keeps them (tests/test_contract_copies.py
# compares them with the originals wherever those are at hand), and the project's own.
CONTRACT_SCENARIOS = sorted((ROOT / "scenarios").glob("*.json"))
OWN_SCENARIOS = sorted((ROOT / "tests" / "scenarios").glob("*.json"))
# Without them the contract tests would pass on nothing: say so instead.
assert CONTRACT_SCENARIOS, f"the contract scenarios of {ROOT / 'scenarios'} are missing"

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


class QuickPasswordHasher(PBKDF2PasswordHasher):
    """Django's PBKDF2 at 1,000 iterations instead of 1.5 million (~0.6 s of CPU a hash).
    Its hashes name their iterations, so any process with the default hashers checks them."""

    iterations = 1000


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
    quick = ["tests.conftest.QuickPasswordHasher", *django_settings.PASSWORD_HASHERS]
    with override_settings(PASSWORD_HASHERS=quick):
        yield


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Rate-limit counters live in the cache, which outlives a test: start each at zero."""
    from django.core.cache import cache

    cache.clear()
    yield


SERVICES = bool(os.environ.get("DATABASE_URL") and os.environ.get("CELERY_BROKER_URL"))


# Run last: they follow the real T3 plays that CI's background player is still making
# (tests/t3/plays.py); at the end of the session nothing waits for it.
LAST = ("tests/t3/test_real_server.py",)


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


def load_scenario(path) -> dict:
    return json.loads(Path(path).read_text())


@pytest.fixture
def source(db):
    source, token = do_create_source("orchestrator", scopes="ingest,read,act")
    source.token = token
    return source


@pytest.fixture
def user(db, django_user_model):
    return django_user_model.objects.create_user("op", password="pw-for-tests")


# The outbound guard's tests (tests/outbound.py): every connect recorded, and the
# setting that lets Supervisor send to loopback and private addresses, each way.
@pytest.fixture
def connects(monkeypatch):
    from tests.outbound import Connects

    return Connects(monkeypatch)


@pytest.fixture
def allow_private(settings):
    settings.SUPERVISOR_OUTBOUND_ALLOW_PRIVATE = True


@pytest.fixture
def refuse_private(settings):
    settings.SUPERVISOR_OUTBOUND_ALLOW_PRIVATE = False
