"""Work rows claimed under a lease: the loop operator actions and the alert outbox share.

A row waits (queued; pending or failing), a worker claims it with a compare-and-swap
that starts a lease (`sending`, one more attempt, `due_at` = the lease's end), does the
work once, and settles it, again only while it is still `sending`: a worker whose lease
ran out and was overtaken changes nothing. A failure is retried after an exponential
backoff; the sweep re-enqueues rows left waiting past their time and takes back those
whose lease ran out (their worker died). The rows carry `state`, `attempts`, `due_at`
and `updated_at`; what each state means beyond that is the caller's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import models, transaction
from django.db.models import F, Q


@dataclass(frozen=True)
class WorkQueue:
    model: type[models.Model]
    # States a worker may claim at once; the first is where a row taken back returns.
    waiting: tuple[str, ...]
    sending: str
    # Hands a row's pk to a worker, now or after `countdown` seconds.
    enqueue: Callable[..., None]

    def due(self, now: datetime) -> Q:
        """Ready to be claimed: waiting, or sending with its lease run out."""
        return Q(state__in=self.waiting) | Q(state=self.sending, due_at__lte=now)


def claim(
    queue: WorkQueue, pk: int, now: datetime, *, lease: float, max_attempts: int | None = None
) -> bool:
    """Take the row for one attempt under a lease; False when another worker holds it,
    it is finished, or (with `max_attempts`) its attempts are spent."""
    rows = queue.model.objects.filter(queue.due(now), pk=pk)
    if max_attempts is not None:
        rows = rows.filter(attempts__lt=max_attempts)
    return bool(
        rows.update(
            state=queue.sending,
            attempts=F("attempts") + 1,
            due_at=now + timedelta(seconds=lease),
            updated_at=now,
        )
    )


def give_up(queue: WorkQueue, pk: int, now: datetime, *, max_attempts: int, **fields) -> bool:
    """Set `fields` on a row that is due again with every attempt spent."""
    spent = queue.model.objects.filter(queue.due(now), pk=pk, attempts__gte=max_attempts)
    return bool(spent.update(updated_at=now, **fields))


def settle(queue: WorkQueue, pk: int, now: datetime, **fields) -> bool:
    """Record the attempt's outcome (`fields`) while the row is still ours (`sending`);
    False when another worker settled it first (our lease had run out)."""
    rows = queue.model.objects.filter(pk=pk, state=queue.sending)
    return bool(rows.update(updated_at=now, **fields))


def state_of(queue: WorkQueue, pk: int) -> str:
    return queue.model.objects.values_list("state", flat=True).get(pk=pk)


def backoff(base: float, attempts: int, cap: float | None = None) -> float:
    """Seconds to wait after the `attempts`-th attempt failed: `base`, doubling each time."""
    delay = base * 2 ** (attempts - 1)
    return delay if cap is None else min(delay, cap)


def retry_on_commit(queue: WorkQueue, pk: int, delay: float) -> None:
    """Enqueue the row again after `delay`, once the failure recorded is committed."""
    transaction.on_commit(lambda: queue.enqueue(pk, countdown=delay))


def requeue_due(
    queue: WorkQueue,
    now: datetime,
    *,
    grace: float,
    limit: int,
    max_attempts: int | None = None,
    give_up_row: Callable[[int, datetime], object] | None = None,
) -> int:
    """Enqueue rows left waiting past their time, and take back those sending past their
    lease. Each is pushed `grace` later first, so a busy worker does not find a pile of
    copies when it gets to them. With `max_attempts`, a row whose attempts are spent is
    handed to `give_up_row` instead."""
    due = list(
        queue.model.objects.filter(state__in=(*queue.waiting, queue.sending), due_at__lte=now)
        .order_by("due_at")
        .values_list("pk", "state", "attempts")[:limit]
    )
    requeued = 0
    for pk, state, attempts in due:
        if max_attempts is not None and attempts >= max_attempts:
            give_up_row(pk, now)
            continue
        back = state if state in queue.waiting else queue.waiting[0]
        with transaction.atomic():
            taken = queue.model.objects.filter(pk=pk, state=state, due_at__lte=now).update(
                state=back, due_at=now + timedelta(seconds=grace), updated_at=now
            )
            if taken:
                requeued += 1
                transaction.on_commit(lambda pk=pk: queue.enqueue(pk))
    return requeued
