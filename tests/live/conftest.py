"""Fixtures of the live socket's tests: a logged-in user's cookie and a flagged task."""

import pytest

from supervisor.core import clock
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag, Task
from tests.support.live import (
    SEED000,
    session_cookie,
)


@pytest.fixture
def cookie(user):
    return session_cookie(user)


@pytest.fixture
def flagged_task(source):
    apply_events(source, SEED000)
    evaluate(source.namespace_id, clock.now())
    task = Task.objects.get(task_id__endswith="retry-port")
    assert Flag.objects.filter(task=task, state=Flag.OPEN).exists()
    return task
