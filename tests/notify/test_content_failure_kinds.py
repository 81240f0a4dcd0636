"""The failure kinds (completed_on_failure, account_limit) alert like the others: the
severity from the catalogue, the title, the evidence and the advice (a success hiding a
failure is critical, an account limit a warning)."""

import json
from datetime import datetime, timedelta

import pytest

from supervisor.core import clock
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.flags.kinds import kind_of
from supervisor.core.ingest.apply import apply_events
from supervisor.notify.grouping import close_windows
from supervisor.notify.models import Notification, Route
from tests.support.scenarios import OWN_SCENARIOS


def replayed(source, name: str) -> datetime:
    scenario = json.loads(next(p for p in OWN_SCENARIOS if p.stem == name).read_text())
    until = datetime.fromisoformat(scenario["until"].replace("Z", "+00:00"))
    with clock.virtual_clock(until):
        apply_events(source, scenario["events"])
        evaluate(source.namespace_id, until)
    return until


@pytest.mark.parametrize(
    ("scenario", "task", "kind", "severity"),
    [
        ("completed-on-failure", "task:cof-int", "completed_on_failure", "critical"),
        ("account-limit", "task:al-usage", "account_limit", "warning"),
    ],
)
def test_an_opening_alerts_with_the_catalogues_severity_and_words(
    source, two_channels, scenario, task, kind, severity
):
    Route.objects.update(kinds=[kind])
    until = replayed(source, scenario)
    close_windows(until + timedelta(days=1))
    notes = list(Notification.objects.all())
    assert notes, "no alert went out"
    words = kind_of(kind)
    for note in notes:
        body = note.subject + "\n" + note.body
        assert f"[{severity}] {words.title}" in body
        assert f"Suggested: {words.advice}" in body
    if kind == "account_limit":
        assert any("The limit resets at 2026-11-25 17:00 UTC." in n.body for n in notes)


def test_a_critical_only_route_hears_of_a_hidden_failure_not_of_an_account_limit(
    source, two_channels
):
    first, _ = two_channels
    Route.objects.filter(channel=first).update(min_severity="critical")
    Route.objects.exclude(channel=first).delete()
    until = replayed(source, "account-limit")
    close_windows(until + timedelta(days=1))
    assert not Notification.objects.exists()
    until = replayed(source, "completed-on-failure")
    close_windows(until + timedelta(days=1))
    assert Notification.objects.filter(channel=first).exists()
