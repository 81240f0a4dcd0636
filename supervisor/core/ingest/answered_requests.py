"""Whether each task request is answered, kept current by ingest (issue 42).

A request (`task.requested`) is answered when a known task of its parent thread carries
its request id (delegation_never_started, contract 1.1). The rule used to read every
request of a thread and every task that might answer one, on each evaluation of the
thread; now ingest keeps `TaskRequest.answered` in the batch's transaction and the
loader reads only the requests not answered, which is nearly always none.

The value is recomputed, not toggled, for every (parent thread, request id) pair a batch
can change: its requests, and its tasks' pairs before and after the batch. So it equals
what a rebuild from the stored rows gives, whatever the arrival order (a property test,
tests/properties/test_ingest_order.py). Two batches that could race on a pair both
name its parent thread, which each locks first (store_batch's entity locks), so they
apply one after the other and the second sees the first. The one exception: a later
description moving a task to another parent or request id, in the same moment as a
request of its old pair arrives, can leave that request marked answered. No
orchestrator here changes a task's parent or request id once delegated, so it is left
so; the migration's recomputation (0029) mends any such pair.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Exists, OuterRef

from supervisor.core.models import Task, TaskRequest


def answering_tasks(namespace_id: int):
    """The known tasks that answer the outer request (an expression for `Exists`)."""
    return Task.objects.filter(
        namespace_id=namespace_id,
        known=True,
        parent_thread_id=OuterRef("parent_thread_id"),
        client_request_id=OuterRef("client_request_id"),
    )


def keep_answered(namespace_id: int, pairs: Iterable[tuple[int, str]]) -> None:
    """Recompute `answered` of the requests of these (parent thread row id, request id)
    pairs: one statement (a superset of the pairs is recomputed, exactly as well)."""
    pairs = {(parent, request) for parent, request in pairs if parent and request}
    if not pairs:
        return
    TaskRequest.objects.filter(
        namespace_id=namespace_id,
        parent_thread_id__in={parent for parent, _ in pairs},
        client_request_id__in={request for _, request in pairs},
    ).update(answered=Exists(answering_tasks(namespace_id)))
