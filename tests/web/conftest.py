"""Fixtures for the pages: a viewer, an operator who may act, and flagged data."""

import json
from datetime import datetime
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission

from supervisor.core.detection.evaluate import evaluate
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.ingest.apply import apply_events

OWN_SCENARIOS = Path(__file__).parent.parent / "scenarios"


@pytest.fixture
def viewer(user):
    """A logged-in user without the act permission (the `user` fixture)."""
    return user


@pytest.fixture
def acting(user):
    user.user_permissions.add(Permission.objects.get(codename="act"))
    return user


def load_own(source, name: str) -> dict:
    scenario = json.loads((OWN_SCENARIOS / name).read_text())
    apply_events(source, scenario["events"])
    until = datetime.fromisoformat(scenario["until"].replace("Z", "+00:00"))
    evaluate(source.namespace_id, until)
    return scenario


@pytest.fixture
def three_levels(source):
    """Lead → release-plan → schema-audit → index-check; release-plan flagged thrice."""
    return load_own(source, "three-levels.json")


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
