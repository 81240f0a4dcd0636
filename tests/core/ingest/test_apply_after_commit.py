"""The steps a batch takes after its commit (marking its subjects, moving its
environments' latest time) meet a database that went down since: each says so in one
warning line and raises nothing. A traceback in the web log reads as a server error to
an operator (the fault suite's PostgreSQL restarts saw one)."""

import logging

import pytest
from django.db import OperationalError
from django.db.models import QuerySet

from supervisor.core.ingest.apply import apply_events
from tests.support.delegations import delegated

pytestmark = pytest.mark.django_db

LOST = "consuming input failed: server closed the connection unexpectedly"


def test_after_commit_steps_on_a_lost_database_each_warn_in_one_line(
    source, django_capture_on_commit_callbacks, monkeypatch, caplog
):
    with django_capture_on_commit_callbacks() as steps:
        apply_events(source, [delegated("task:a", "Port the retry loop", "thread:a")])
    assert steps, "the batch left no step for after its commit"

    def lost(*args, **kwargs):
        raise OperationalError(LOST)

    monkeypatch.setattr(QuerySet, "update", lost)
    caplog.set_level(logging.WARNING)
    for step in steps:
        step()  # raises nothing
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warnings if "environment" in r.getMessage()] == [
        f"could not move 1 environment(s) after their batch: {LOST}"
    ]
    assert all(r.exc_info is None for r in warnings), "a traceback in the log"
