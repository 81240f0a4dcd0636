"""The retention job: delete what is past its retention (core/retention.py)."""

from __future__ import annotations

from celery import shared_task

from supervisor.core import clock
from supervisor.core.retention import prune


@shared_task(name="supervisor.prune", acks_late=True, soft_time_limit=3000, time_limit=3300)
def prune_old_rows() -> dict[str, int]:
    """Delete what is past its retention; a second run at once skips the rows it holds."""
    return prune(clock.now())
