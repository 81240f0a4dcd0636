"""The only writers of flags: each opening, resolution and acknowledgement is a do_*
function that also appends to the change log in the same transaction."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Q

from supervisor.core import changes
from supervisor.core.changes import ChangeKind
from supervisor.core.facts.snapshot import Finding
from supervisor.core.models import Flag, Task
from supervisor.core.store.batch_write import update_rows

# Called with the flags opened together, inside their opening's transaction: notify
# registers its alerts here (NotifyConfig.ready), so an opening is never without its alerts.
_opened_hooks: list[Callable[[list[Flag], datetime], object]] = []


def on_flags_opened(hook: Callable[[list[Flag], datetime], object]) -> None:
    if hook not in _opened_hooks:
        _opened_hooks.append(hook)


def _subject(flag: Flag, **details) -> changes.Subject:
    facts = {"flag": flag.pk, "kind": flag.kind, "state": flag.state, **details}
    return changes.Subject(flag.subject_type, flag.subject_id, flag.namespace_id, facts)


def _opened(flags: list[Flag], now: datetime) -> None:
    changes.record_all([(ChangeKind.FLAG_OPENED, _subject(flag)) for flag in flags])
    for hook in _opened_hooks:
        hook(flags, now)


def _task_pks(namespace_id: int, findings: list[Finding]) -> dict[str, int]:
    ids = {f.subject_id for f in findings if f.subject_type == "task"}
    if not ids:
        return {}
    tasks = Task.objects.filter(namespace_id=namespace_id, task_id__in=ids)
    return dict(tasks.values_list("task_id", "pk"))


def _new_flag(namespace_id: int, finding: Finding, task_pks: dict, now: datetime) -> Flag:
    return Flag(
        namespace_id=namespace_id,
        subject_type=finding.subject_type,
        subject_id=finding.subject_id,
        task_id=task_pks.get(finding.subject_id) if finding.subject_type == "task" else None,
        kind=finding.kind,
        state=Flag.OPEN,
        opened_at=now,
        evidence=finding.evidence,
    )


def do_open_flags(namespace_id: int, findings: list[Finding], now: datetime) -> list[Flag]:
    """Open each finding as a new flag record, in a few statements whatever their number
    (an evaluation opens hundreds under a burst, and one at a time they were half its
    cost); the flags opened. One already open (another worker won the race: the partial
    unique constraint decides) makes each be opened on its own, that one skipped."""
    if not findings:
        return []
    task_pks = _task_pks(namespace_id, findings)
    flags = [_new_flag(namespace_id, finding, task_pks, now) for finding in findings]
    try:
        with transaction.atomic():
            Flag.objects.bulk_create(flags)
            _opened(flags, now)
    except IntegrityError:
        return [flag for f in findings if (flag := do_open_flag(namespace_id, f, now))]
    return flags


def do_open_flag(namespace_id: int, finding: Finding, now: datetime) -> Flag | None:
    """Open `finding` as a new flag record; None when one is open already (another
    worker won the race: the partial unique constraint decides, not hope)."""
    flag = _new_flag(namespace_id, finding, _task_pks(namespace_id, [finding]), now)
    try:
        with transaction.atomic():
            flag.save(force_insert=True)
            _opened([flag], now)  # in the opening's own transaction: never without alerts
    except IntegrityError:
        return None
    return flag


def do_resolve_flag(
    flag: Flag, now: datetime, *, reason: str | None = None, suppress: bool = False
) -> bool:
    """Resolve an open flag (compare-and-swap on its state); False if it was not open.
    `reason` says what resolved it, in an operator's words; `suppress` keeps the rules
    from opening it again while its condition still holds (an action answered it)."""
    return bool(do_resolve_flags([(flag, reason)], now, suppress=suppress))


def _lock_open(pks: list[int]) -> set[int]:
    """Of these flags, those still open, locked until the transaction ends, in order of
    id (two evaluations never wait for each other in a circle; an operator's action
    locks one flag at a time)."""
    rows = Flag.objects.select_for_update().filter(pk__in=pks, state=Flag.OPEN).order_by("pk")
    return set(rows.values_list("pk", flat=True))


def do_resolve_flags(
    resolutions: list[tuple[Flag, str | None]], now: datetime, *, suppress: bool = False
) -> list[Flag]:
    """Resolve open flags, each with its reason (None: none given), in a few statements;
    the flags resolved here (compare-and-swap on their state: one resolved meanwhile
    is left as it is)."""
    if not resolutions:
        return []
    with transaction.atomic():
        pks = [flag.pk for flag, _ in resolutions]
        still_open = _lock_open(pks)
        by_reason: dict[str | None, list[Flag]] = defaultdict(list)
        for flag, reason in resolutions:
            if flag.pk in still_open:
                by_reason[reason].append(flag)
        resolved, recorded = [], []
        for reason, flags in by_reason.items():
            Flag.objects.filter(pk__in=[flag.pk for flag in flags]).update(
                state=Flag.RESOLVED, resolved_at=now, resolve_reason=reason, suppressed=suppress
            )
            for flag in flags:
                flag.state, flag.resolved_at = Flag.RESOLVED, now
                flag.resolve_reason, flag.suppressed = reason, suppress
                details = {"reason": reason} if reason else {}
                recorded.append((ChangeKind.FLAG_RESOLVED, _subject(flag, **details)))
                resolved.append(flag)
        changes.record_all(recorded)
    return resolved


def do_update_evidence(flag: Flag, evidence: dict) -> None:
    do_update_evidences([(flag, evidence)])


def do_update_evidences(updates: list[tuple[Flag, dict]]) -> None:
    """Give open flags their new evidence, in a few statements (under a burst an
    evaluation updates thousands); a flag resolved meanwhile is left as it is."""
    if not updates:
        return
    with transaction.atomic():
        pks = [flag.pk for flag, _ in updates]
        still_open = _lock_open(pks)
        updates = [(flag, evidence) for flag, evidence in updates if flag.pk in still_open]
        update_rows(Flag, ((flag.pk, {"evidence": evidence}) for flag, evidence in updates))
        for flag, evidence in updates:
            flag.evidence = evidence
        changes.record_all([(ChangeKind.FLAG_UPDATED, _subject(flag)) for flag, _ in updates])


def awaiting_attention(now: datetime) -> Q:
    """Open flags nobody has taken up: not acknowledged, and not snoozed past `now`.
    They are what an operator's counts, title and "needing action" show; the others
    stay open (the condition holds) but are shown apart."""
    return Q(state=Flag.OPEN, acknowledged_at__isnull=True) & (
        Q(snoozed_until__isnull=True) | Q(snoozed_until__lte=now)
    )


def taken_up(now: datetime) -> Q:
    """Open flags someone acknowledged, or snoozed until after `now`."""
    return Q(state=Flag.OPEN) & (Q(acknowledged_at__isnull=False) | Q(snoozed_until__gt=now))


class FlagActionError(ValueError):
    """An operator's flag action that cannot apply (the flag is resolved, a bad time)."""


def do_acknowledge_flag(flag: Flag, now: datetime, *, by=None, actor: str = "") -> Flag:
    """Acknowledge an open flag; acknowledging twice keeps the first acknowledgement."""
    with transaction.atomic():
        flag = Flag.objects.select_for_update().get(pk=flag.pk)
        if flag.state != Flag.OPEN:
            raise FlagActionError("the flag is resolved; only an open flag can be acknowledged")
        if flag.acknowledged_at is None:
            flag.acknowledged_at, flag.acknowledged_by = now, by
            flag.save(update_fields=["acknowledged_at", "acknowledged_by"])
            changes.record(ChangeKind.FLAG_ACKNOWLEDGED, _subject(flag), actor=actor)
    return flag


def do_snooze_flag(flag: Flag, until: datetime, now: datetime, *, actor: str = "") -> Flag:
    """Snooze an open flag until a later time; it stays open, alerts wait until then."""
    if until <= now:
        raise FlagActionError("'until' must be in the future")
    with transaction.atomic():
        flag = Flag.objects.select_for_update().get(pk=flag.pk)
        if flag.state != Flag.OPEN:
            raise FlagActionError("the flag is resolved; only an open flag can be snoozed")
        if flag.snoozed_until != until:
            flag.snoozed_until = until
            flag.save(update_fields=["snoozed_until"])
            changes.record(
                ChangeKind.FLAG_SNOOZED, _subject(flag), actor=actor, until=until.isoformat()
            )
    return flag


def do_unacknowledge_flag(flag: Flag, *, actor: str = "") -> Flag:
    """Take an acknowledgement back: the flag awaits attention again (and its alerts
    follow up again). On a flag not acknowledged it changes nothing."""
    with transaction.atomic():
        flag = Flag.objects.select_for_update().get(pk=flag.pk)
        if flag.state != Flag.OPEN:
            raise FlagActionError("the flag is resolved; only an open flag can be un-acknowledged")
        if flag.acknowledged_at is not None:
            flag.acknowledged_at, flag.acknowledged_by = None, None
            flag.save(update_fields=["acknowledged_at", "acknowledged_by"])
            changes.record(ChangeKind.FLAG_UNACKNOWLEDGED, _subject(flag), actor=actor)
    return flag


def do_unsnooze_flag(flag: Flag, now: datetime, *, actor: str = "") -> Flag:
    """End a snooze now. On a flag not snoozed past `now` it changes nothing."""
    with transaction.atomic():
        flag = Flag.objects.select_for_update().get(pk=flag.pk)
        if flag.state != Flag.OPEN:
            raise FlagActionError("the flag is resolved; only an open flag can be un-snoozed")
        if flag.snoozed_until is not None and flag.snoozed_until > now:
            flag.snoozed_until = None
            flag.save(update_fields=["snoozed_until"])
            changes.record(ChangeKind.FLAG_UNSNOOZED, _subject(flag), actor=actor)
    return flag


def do_resolve_flag_by_hand(
    flag: Flag, now: datetime, *, reason: str, by=None, actor: str = ""
) -> Flag:
    """An operator resolves a flag with a reason; it then stays resolved until its
    condition has stopped holding and holds again. Resolving a resolved flag is a no-op."""
    if not reason or not reason.strip():
        raise FlagActionError("a reason is needed to resolve a flag by hand")
    with transaction.atomic():
        updated = Flag.objects.filter(pk=flag.pk, state=Flag.OPEN).update(
            state=Flag.RESOLVED,
            resolved_at=now,
            resolved_by=by,
            resolve_reason=reason.strip(),
            suppressed=True,
        )
        flag.refresh_from_db()
        if updated:
            changes.record(
                ChangeKind.FLAG_RESOLVED, _subject(flag), actor=actor, reason=flag.resolve_reason
            )
    return flag
