"""A misrouted_wake opening sends an alert: critical, in the kind's words, with the task's
reading of what reached the parent."""

from datetime import datetime, timedelta

import pytest

from supervisor.core.models import Flag
from supervisor.notify.grouping import close_windows
from supervisor.notify.models import Channel, Notification, Route
from tests.support.scenarios import load_own

pytestmark = pytest.mark.django_db


def test_a_misrouted_wake_alerts_a_route_for_critical_flags(source):
    channel = Channel.objects.create(name="oncall", kind="apprise", target="json://127.0.0.1:9/x")
    Route.objects.create(channel=channel, group_window=30, min_severity="critical")
    scenario = load_own(source, "misrouted-wake.json")
    flag = Flag.objects.get(kind="misrouted_wake", subject_id="task:migrate", state=Flag.OPEN)
    until = datetime.fromisoformat(scenario["until"].replace("Z", "+00:00"))
    close_windows(until + timedelta(seconds=31))
    note = Notification.objects.get(flags=[flag.pk])
    assert note.subject.startswith("[critical] Wake sent to the wrong thread: ")
    assert "was sent by a wake to a thread that is not its parent" in note.body
    assert "Suggested: Deliver the latest result to the parent" in note.body
    assert "Latest result:" in note.body and "has not reached the parent" in note.body
