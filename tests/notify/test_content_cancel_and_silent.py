"""A cancel that did not stop the work and a silent background item each send
an alert, in the catalogue's words, once their flag opens from the scenario's events."""

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from supervisor.core.detection.evaluate import evaluate
from supervisor.core.flags.kinds import kind_of
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag
from supervisor.notify.grouping import close_windows
from supervisor.notify.models import Notification
from tests.support.alerts import send_all

SCENARIOS = Path(__file__).parent.parent / "scenarios"


@pytest.mark.parametrize(
    ("name", "kind", "title"),
    [
        ("cancel-not-propagated.json", "cancel_not_propagated", "Refactor the billing module"),
        ("silent-background-item.json", "silent_background_item", "Roll out 5.2 to production"),
    ],
)
def test_the_flag_sends_an_alert_in_its_words(source, receivers, name, kind, title):  # noqa: F811
    http, smtp = receivers
    scenario = json.loads((SCENARIOS / name).read_text())
    source.settings = scenario["settings"]
    source.save()
    apply_events(source, scenario["events"])
    until = datetime.fromisoformat(scenario["until"].replace("Z", "+00:00"))
    evaluate(source.namespace_id, until)
    assert Flag.objects.filter(kind=kind, state=Flag.OPEN).exists()
    close_windows(until + timedelta(seconds=31))
    send_all()
    assert Notification.objects.exists()
    words = kind_of(kind)
    mail = "\n".join(smtp.raw)
    assert f"{words.title}: {title}" in mail
    assert words.advice.split(";")[0] in mail.replace("=\n", "").replace("\n", " ")
    assert any(words.title in raw for raw in http.raw)
