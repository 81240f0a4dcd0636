"""Re-notify and escalate on time while a flag stays open and unacknowledged."""

from datetime import timedelta

import time_machine

from supervisor.core.flags.writers import do_acknowledge_flag, do_snooze_flag
from supervisor.jobs.notifications import sweep
from supervisor.notify.models import Channel, Notification, Route
from tests.support.alerts import T0, open_flag


def kinds():
    return list(Notification.objects.order_by("pk").values_list("kind", "channel__name"))


def routed(renotify=None, escalate=None):
    page = Channel.objects.create(name="page", kind="apprise", target="json://127.0.0.1:9/p")
    chat = Channel.objects.create(name="chat", kind="apprise", target="json://127.0.0.1:9/c")
    Route.objects.create(
        channel=chat,
        group_window=30,
        renotify_every=renotify,
        escalate_after=escalate,
        escalate_to=page if escalate else None,
    )


def test_renotify_fires_every_interval_while_open_and_unacknowledged(tasks):
    routed(renotify=600)
    with time_machine.travel(T0, tick=False) as clock:
        flag = open_flag(tasks, 0, T0)
        clock.shift(31)
        sweep(T0 + timedelta(seconds=31))
        for at in (630, 1230):
            sweep(T0 + timedelta(seconds=at - 1))
            assert len(kinds()) == 1 + (at > 630)
            sweep(T0 + timedelta(seconds=at + 1))
        assert kinds() == [("opened", "chat"), ("renotify", "chat"), ("renotify", "chat")]
        do_acknowledge_flag(flag, T0 + timedelta(seconds=1300))
        sweep(T0 + timedelta(seconds=3000))
    assert len(kinds()) == 3


def test_escalation_goes_to_the_second_channel_once_after_its_time(tasks):
    routed(escalate=900)
    open_flag(tasks, 0, T0)
    sweep(T0 + timedelta(seconds=31))
    sweep(T0 + timedelta(seconds=899))
    assert kinds() == [("opened", "chat")]
    sweep(T0 + timedelta(seconds=901))
    sweep(T0 + timedelta(seconds=5000))
    assert kinds() == [("opened", "chat"), ("escalation", "page")]
    assert Notification.objects.get(kind="escalation").subject.startswith("Escalated")


def test_a_snooze_pushes_reminders_and_escalation_past_it(tasks):
    routed(renotify=600, escalate=900)
    flag = open_flag(tasks, 0, T0)
    sweep(T0 + timedelta(seconds=31))
    do_snooze_flag(flag, T0 + timedelta(hours=2), T0 + timedelta(seconds=60))
    sweep(T0 + timedelta(seconds=1000))
    assert kinds() == [("opened", "chat")]
    sweep(T0 + timedelta(hours=2, seconds=1))
    assert sorted(kinds()) == [("escalation", "page"), ("opened", "chat"), ("renotify", "chat")]


def test_an_acknowledged_flag_is_not_escalated(tasks):
    routed(escalate=900)
    flag = open_flag(tasks, 0, T0)
    sweep(T0 + timedelta(seconds=31))
    do_acknowledge_flag(flag, T0 + timedelta(seconds=100))
    sweep(T0 + timedelta(seconds=1000))
    assert kinds() == [("opened", "chat")]
