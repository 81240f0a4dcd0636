"""Openings wait for their route's group window; one message per channel per burst."""

from datetime import time, timedelta

from supervisor.core.flags.writers import do_resolve_flag
from supervisor.notify.grouping import close_windows
from supervisor.notify.models import FlagAlert, Notification, Route
from tests.support.alerts import T0, open_flag


def test_a_burst_of_50_flags_in_10_s_is_one_message_per_channel(tasks, two_channels):
    for n in range(50):
        open_flag(tasks, n, T0 + timedelta(seconds=n * 0.2))
    assert close_windows(T0 + timedelta(seconds=29)) == 0
    assert close_windows(T0 + timedelta(seconds=31)) == 2
    notes = Notification.objects.order_by("channel")
    assert [n.channel for n in notes] == list(two_channels)
    for note in notes:
        assert note.kind == "grouped" and len(note.flags) == 50
        assert note.subject == "50 flags opened (50 critical)"
        assert note.body.count("Acknowledge or snooze:") == 5  # the worst few, not 50
    assert close_windows(T0 + timedelta(seconds=60)) == 0  # nothing twice


def test_a_flag_resolved_inside_the_window_sends_nothing(tasks, two_channels):
    flag = open_flag(tasks, 0, T0)
    do_resolve_flag(flag, T0 + timedelta(seconds=5))
    assert close_windows(T0 + timedelta(seconds=31)) == 0
    assert not Notification.objects.exists()
    assert set(FlagAlert.objects.values_list("state", flat=True)) == {"dropped"}


def test_only_the_flags_still_open_are_in_the_grouped_message(tasks, two_channels):
    flags = [open_flag(tasks, n, T0 + timedelta(seconds=n)) for n in range(3)]
    do_resolve_flag(flags[1], T0 + timedelta(seconds=10))
    close_windows(T0 + timedelta(seconds=31))
    assert {tuple(n.flags) for n in Notification.objects.all()} == {(flags[0].pk, flags[2].pk)}


def test_one_flag_gets_its_own_message_naming_its_task(tasks, two_channels):
    open_flag(tasks, 7, T0)
    close_windows(T0 + timedelta(seconds=31))
    note = Notification.objects.first()
    assert note.kind == "opened" and note.subject == "[critical] Stale result handed on: Task 7"
    assert "Suggested: Deliver the latest result to the parent." in note.body
    assert f"ref: {note.key}" in note.body


def test_an_opening_after_the_window_starts_a_new_burst(tasks, two_channels):
    open_flag(tasks, 0, T0)
    close_windows(T0 + timedelta(seconds=31))
    open_flag(tasks, 1, T0 + timedelta(seconds=40))
    assert close_windows(T0 + timedelta(seconds=69)) == 0
    assert close_windows(T0 + timedelta(seconds=71)) == 2
    assert Notification.objects.filter(kind="opened").count() == 4


def test_routes_filter_by_kind_and_severity(tasks, two_channels):
    first, second = two_channels
    Route.objects.filter(channel=first).update(min_severity="critical")
    Route.objects.filter(channel=second).update(kinds=["stuck"])
    open_flag(tasks, 0, T0, kind="dispatch_lag")  # a warning, not stuck: nowhere
    open_flag(tasks, 1, T0, kind="stuck")  # a warning: second only
    close_windows(T0 + timedelta(seconds=31))
    assert list(Notification.objects.values_list("channel", flat=True)) == [second.pk]


def test_quiet_hours_hold_the_message_until_they_end(tasks, two_channels):
    Route.objects.update(quiet_start=time(11, 0), quiet_end=time(13, 0), quiet_tz="UTC")
    open_flag(tasks, 0, T0)
    assert close_windows(T0 + timedelta(seconds=31)) == 0
    assert close_windows(T0 + timedelta(hours=1, seconds=1)) == 2
