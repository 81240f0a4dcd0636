"""No bad subject stops a sweep: what raises is recorded against its subject (or step),
backed off, and the sweep goes on with the rest.

A sweep loads its job's failures once (`Failures(job, now)`), leaves out the subjects
still backing off, runs each subject or step inside `isolated` (or tests its own
outcome with `record`/`worked`), and forgets a failure when its subject works again.
A database that went away is not a subject's fault: it is raised, and the whole pass
fails as before (the next one starts over).
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from datetime import datetime, timedelta

from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.db.models import F

from supervisor.core.contract.events import storable
from supervisor.core.models import SweepFailure

log = logging.getLogger(__name__)

BACKOFF, BACKOFF_MAX = 30, 3600  # seconds before a failing subject is tried again
# The database itself is gone (or locked, or deadlocked): no subject is to blame.
LOST_DATABASE = (OperationalError, InterfaceError)


def failure_key(job: str, subject_type: str, subject_id: str, namespace_id: int | None) -> str:
    return f"{job}:{subject_type}:{namespace_id or '-'}:{subject_id}"


def backoff(failures: int) -> timedelta:
    return timedelta(seconds=min(BACKOFF_MAX, BACKOFF * 2 ** max(0, failures - 1)))


class Failures:
    """One pass's view of its job's failures."""

    def __init__(self, job: str, now: datetime):
        self.job, self.now = job, now
        self.rows = {f.key: f for f in SweepFailure.objects.filter(job=job)}

    def backing_off(self, subject_type: str) -> set[tuple[int | None, str]]:
        """(namespace, subject id) of this type not to be tried in this pass."""
        return {
            (f.namespace_id, f.subject_id)
            for f in self.rows.values()
            if f.subject_type == subject_type and f.retry_at > self.now
        }

    def record(
        self, subject_type: str, subject_id: str, exc: BaseException, namespace_id=None
    ) -> SweepFailure:
        key = failure_key(self.job, subject_type, subject_id, namespace_id)
        log.error(
            "%s: %s %s failed; the rest goes on, it is tried again later",
            self.job,
            subject_type,
            subject_id,
            exc_info=exc,
        )
        failure = do_record_sweep_failure(
            self.job, subject_type, subject_id, namespace_id, exc, self.now
        )
        self.rows[key] = failure
        return failure

    def worked(self, subject_type: str, subject_ids, namespace_id=None) -> None:
        """These subjects worked: forget what failed of them (no query when nothing had)."""
        keys = [failure_key(self.job, subject_type, s, namespace_id) for s in subject_ids]
        gone = [key for key in keys if key in self.rows]
        if gone:
            SweepFailure.objects.filter(key__in=gone).delete()
            for key in gone:
                del self.rows[key]

    @contextlib.contextmanager
    def isolated(self, subject_type: str, subject_id: str, namespace_id=None):
        """Run the body; if it raises (but for a lost database), record the failure
        instead of raising. Inside a transaction, wrap the body in its own atomic block
        so that what it wrote is undone with it."""
        try:
            yield
        except LOST_DATABASE:
            raise
        except Exception as exc:
            self.record(subject_type, subject_id, exc, namespace_id)
        else:
            self.worked(subject_type, [subject_id], namespace_id)


def do_record_sweep_failure(
    job: str,
    subject_type: str,
    subject_id: str,
    namespace_id: int | None,
    exc: BaseException,
    now: datetime,
) -> SweepFailure:
    """One more failure of the subject in a row: its error, traceback and next try."""
    key = failure_key(job, subject_type, subject_id, namespace_id)
    # Storable: a message may quote agent text (a NUL or a lone surrogate).
    error = storable((f"{type(exc).__name__}: {exc}".splitlines() or [""])[0][:2000])
    text = storable("".join(traceback.format_exception(exc))[-20000:])
    for _attempt in range(2):  # a racing writer made the row: update it then
        with transaction.atomic():
            updated = SweepFailure.objects.filter(key=key).update(
                failures=F("failures") + 1, error=error, traceback=text, last_failed_at=now
            )
            if updated:
                failure = SweepFailure.objects.get(key=key)
                failure.retry_at = now + backoff(failure.failures)
                failure.save(update_fields=["retry_at"])
                return failure
            try:
                with transaction.atomic():
                    return SweepFailure.objects.create(
                        job=job,
                        subject_type=subject_type,
                        subject_id=subject_id,
                        namespace_id=namespace_id,
                        key=key,
                        error=error,
                        traceback=text,
                        first_failed_at=now,
                        last_failed_at=now,
                        retry_at=now + backoff(1),
                    )
            except IntegrityError:
                continue
    return SweepFailure.objects.get(key=key)
