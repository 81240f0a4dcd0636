"""The only writers of flags: each opening, resolution and acknowledgement is a do_*
function that also appends to the change log in the same transaction."""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction

from . import clock
from .models import Change, Flag, Task
from .snapshot import Finding


def _change(flag: Flag, kind: str) -> None:
    Change.objects.create(
        at=clock.now(),
        namespace_id=flag.namespace_id,
        kind=kind,
        subject_type=flag.subject_type,
        subject_id=flag.subject_id,
        payload={"flag": flag.pk, "kind": flag.kind, "state": flag.state},
    )


def do_open_flag(namespace_id: int, finding: Finding, now: datetime) -> Flag | None:
    """Open `finding` as a new flag record; None when one is open already (another
    worker won the race: the partial unique constraint decides, not hope)."""
    task_pk = None
    if finding.subject_type == "task":
        task_pk = (
            Task.objects.filter(namespace_id=namespace_id, task_id=finding.subject_id)
            .values_list("pk", flat=True)
            .first()
        )
    try:
        with transaction.atomic():
            flag = Flag.objects.create(
                namespace_id=namespace_id,
                subject_type=finding.subject_type,
                subject_id=finding.subject_id,
                task_id=task_pk,
                kind=finding.kind,
                state=Flag.OPEN,
                opened_at=now,
                evidence=finding.evidence,
            )
            _change(flag, "flag.opened")
    except IntegrityError:
        return None
    return flag


def do_resolve_flag(flag: Flag, now: datetime, *, by=None, reason: str | None = None) -> bool:
    """Resolve an open flag (compare-and-swap on its state); False if it was not open."""
    with transaction.atomic():
        updated = Flag.objects.filter(pk=flag.pk, state=Flag.OPEN).update(
            state=Flag.RESOLVED,
            resolved_at=now,
            resolved_by=by,
            resolve_reason=reason,
            suppressed=by is not None,
        )
        if updated:
            flag.refresh_from_db()
            _change(flag, "flag.resolved")
    return bool(updated)


def do_update_evidence(flag: Flag, evidence: dict) -> None:
    with transaction.atomic():
        if Flag.objects.filter(pk=flag.pk, state=Flag.OPEN).update(evidence=evidence):
            flag.evidence = evidence
            _change(flag, "flag.updated")
