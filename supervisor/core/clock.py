"""The one place that says "now": the real clock, or a replay's virtual one."""

from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from django.utils import timezone

_virtual: ContextVar[datetime | None] = ContextVar("virtual_now", default=None)


def now() -> datetime:
    return _virtual.get() or timezone.now()


@contextmanager
def virtual_clock(at: datetime):
    """Make `now()` answer `at` (movable with `set_virtual`) inside the block."""
    token = _virtual.set(at)
    try:
        yield
    finally:
        _virtual.reset(token)


def set_virtual(at: datetime) -> None:
    if _virtual.get() is None:
        raise RuntimeError("set_virtual() outside virtual_clock()")
    _virtual.set(at)
