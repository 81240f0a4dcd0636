"""A silenced flag's alerts wait for the silence, as a snoozed flag's wait for the
snooze; when the silence ends early they are due at once, and when it expires, then."""

from datetime import timedelta

from supervisor.core.triage.silences import do_create_silence, do_edit_silence, do_end_silence
from supervisor.notify.followup import follow_up
from supervisor.notify.grouping import close_windows
from supervisor.notify.models import FlagAlert, Notification, Route
from tests.support.alerts import T0, open_flag

UNTIL = T0 + timedelta(hours=2)


def silence_stale():
    return do_create_silence(
        kinds=["stale_result"], reason="known", ends_at=UNTIL, now=T0, actor="user:op"
    )


def test_a_silenced_flag_sends_nothing_until_the_silence_expires(tasks, two_channels):
    silence_stale()
    open_flag(tasks, 0, T0)
    assert close_windows(T0 + timedelta(seconds=31)) == 0
    assert set(FlagAlert.objects.values_list("due_at", flat=True)) == {UNTIL}
    assert close_windows(UNTIL - timedelta(seconds=1)) == 0
    assert close_windows(UNTIL) == 2  # expired: alerts resume, as after a snooze
    assert Notification.objects.count() == 2


def test_a_flag_no_silence_matches_is_sent_as_before(tasks, two_channels):
    silence_stale()
    open_flag(tasks, 0, T0, kind="stuck")
    assert close_windows(T0 + timedelta(seconds=31)) == 2


def test_ending_a_silence_early_makes_its_held_alerts_due_now(tasks, two_channels):
    made = silence_stale()
    open_flag(tasks, 0, T0)
    close_windows(T0 + timedelta(seconds=31))
    ended_at = T0 + timedelta(minutes=10)
    do_end_silence(made, ended_at, actor="user:op")
    assert set(FlagAlert.objects.values_list("due_at", flat=True)) == {ended_at}
    assert close_windows(ended_at + timedelta(seconds=1)) == 2


def test_narrowing_a_silence_lets_what_it_no_longer_matches_go(tasks, two_channels):
    made = silence_stale()
    open_flag(tasks, 0, T0)
    open_flag(tasks, 1, T0)
    close_windows(T0 + timedelta(seconds=31))
    edited_at = T0 + timedelta(minutes=5)
    do_edit_silence(
        made,
        kinds=["stale_result"],
        title_words=["task", "1"],
        reason="only task 1",
        ends_at=UNTIL,
        now=edited_at,
        actor="user:op",
    )
    assert close_windows(edited_at + timedelta(seconds=1)) == 2  # task 0's, one per channel
    (sent,) = {tuple(n.flags) for n in Notification.objects.all()}
    assert FlagAlert.objects.filter(state=FlagAlert.WAITING, due_at=UNTIL).count() == 2
    assert len(sent) == 1


def test_reminders_wait_for_a_silence_and_resume_when_it_ends(tasks, two_channels):
    Route.objects.update(renotify_every=600)
    open_flag(tasks, 0, T0)
    close_windows(T0 + timedelta(seconds=31))  # notified; reminders due in 10 min
    made = silence_stale()
    later = T0 + timedelta(minutes=11)
    assert follow_up(later) == 0
    assert set(FlagAlert.objects.values_list("renotify_at", flat=True)) == {UNTIL}
    do_end_silence(made, later + timedelta(minutes=1), actor="user:op")
    assert follow_up(later + timedelta(minutes=2)) == 2
