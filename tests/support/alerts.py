"""The alert tests' moment and their flags, opened as the rules would open them."""

from datetime import UTC, datetime

from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.models import Flag
from supervisor.jobs import notifications
from supervisor.notify.models import Notification

T0 = datetime(2026, 11, 6, 12, 0, tzinfo=UTC)


def open_flag(source, n: int, now: datetime, kind: str = "stale_result") -> Flag:
    flag = do_open_flag(source.namespace_id, Finding(kind, "task", f"task:t{n}"), now)
    assert flag is not None
    return flag


def send_all() -> None:
    for pk in Notification.objects.values_list("pk", flat=True):
        assert notifications.perform(pk) == "sent", Notification.objects.get(pk=pk).last_error
