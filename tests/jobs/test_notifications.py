"""No bad flag stops the alert sweep: a message that cannot be written is recorded
against its channel's window and waits out a backoff; the other channels' go out."""

from datetime import timedelta

from supervisor.core.models import SweepFailure
from supervisor.jobs import notifications as notify_tasks
from supervisor.notify import content
from supervisor.notify.models import FlagAlert, Notification
from tests.support.alerts import T0, open_flag
from tests.support.factories import make_tasks


def test_a_flag_whose_alert_cannot_be_written_stops_no_other_alert(
    source, two_channels, monkeypatch
):
    make_tasks(source, 3)
    flags = [open_flag(source, n, T0) for n in range(3)]
    real = content.for_flags

    def for_flags(some):
        if any(f.pk == flags[1].pk for f in some):
            raise RuntimeError("this flag's text cannot be rendered")
        return real(some)

    monkeypatch.setattr(content, "for_flags", for_flags)
    # One window per channel holds all three flags: make the first channel's alerts for
    # flag 1 its own window, so one message fails and the others are written.
    first, second = two_channels
    FlagAlert.objects.filter(route__channel=second).update(due_at=T0 + timedelta(seconds=30))
    FlagAlert.objects.filter(route__channel=first).update(due_at=T0 + timedelta(seconds=30))
    FlagAlert.objects.filter(route__channel=second, flag=flags[1]).delete()
    written = notify_tasks.sweep(T0 + timedelta(seconds=31))
    assert written == 1
    assert Notification.objects.filter(channel=second).count() == 1
    failure = SweepFailure.objects.get(job="notify_sweep")
    assert failure.subject_id == f"window:channel:{first.pk}"
    waiting = FlagAlert.objects.filter(route__channel=first, state=FlagAlert.WAITING)
    assert waiting.count() == 3 and all(a.due_at == failure.retry_at for a in waiting)
