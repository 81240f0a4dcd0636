from datetime import UTC, datetime

import pytest

from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.models import Flag
from supervisor.notify.models import Channel, Route
from tests.factories import make_tasks

T0 = datetime(2026, 11, 6, 12, 0, tzinfo=UTC)


def open_flag(source, n: int, now: datetime, kind: str = "stale_result") -> Flag:
    flag = do_open_flag(source.namespace_id, Finding(kind, "task", f"task:t{n}"), now)
    assert flag is not None
    return flag


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
