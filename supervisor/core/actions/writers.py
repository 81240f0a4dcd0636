"""Operators' actions on a task: cancel, continue, deliver.

A request becomes an `Action` row (with a preview first, previews.py); a worker performs
it through the task's connector (sending.py). The row is the record: claiming is a
compare-and-swap with a lease, the connector gets the action's idempotency key, and the
sweep re-enqueues what is left queued or whose lease ran out. A delivery is at most once
per (task, run) by a partial unique constraint; the same request sent again is the same
action (idempotency.py).
"""

from __future__ import annotations

import logging
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.crypto import constant_time_compare

from supervisor.core import changes, clock, dispatch
from supervisor.core.actions import outcomes as action_outcomes
from supervisor.core.actions.idempotency import asked_before, check_key, key_id
from supervisor.core.actions.previews import (
    ActionRefused,
    PreviewChanged,
    new_preview_id,
    preview_action,
    preview_id_of,
)
from supervisor.core.changes import ChangeKind
from supervisor.core.contract.connectors import Receipt
from supervisor.core.contract.source_names import internal_source_name
from supervisor.core.facts import ownership
from supervisor.core.facts.loader import load_for_task
from supervisor.core.flags.writers import do_resolve_flag
from supervisor.core.ingest.apply import do_ingest
from supervisor.core.ingest.own_records import SUPERVISOR_ENV
from supervisor.core.models import Action, Flag, Source, Task
from supervisor.core.store import leases

log = logging.getLogger(__name__)

BULK_LIMIT = 500  # tasks one bulk action may touch


def config() -> dict:
    return settings.SUPERVISOR_ACTIONS


# --- request ------------------------------------------------------------------------


def _subject(action: Action) -> changes.Subject:
    facts = {
        "action": action.pk,
        "kind": action.kind,
        "state": action.state,
        "actor": action.actor_name,
        "reason": action.reason,
    }
    return changes.Subject("task", action.task.task_id, action.task.namespace_id, facts)


def do_request_action(
    task: Task,
    kind: str,
    *,
    actor: str,
    user=None,
    run: str | None = None,
    message: str | None = None,
    reason: str | None = None,
    key: str | None = None,
    previewed: str | None = None,
    preview_id: str | None = None,
    bulk_key: str | None = None,
) -> tuple[Action, bool]:
    """Record an action and enqueue it; (action, created). The same request again
    returns the first action, however many race with it: the same idempotency key in
    the task's namespace (in another namespace it is a request of its own), the same
    preview confirmed (`previewed`'s id, or a bulk preview's `preview_id`), or the same
    bulk request's key. A second delivery of a run is refused (409). `previewed`, the
    digest of the preview the operator confirmed, must match what would be sent now
    (else PreviewChanged)."""
    if key is not None:
        check_key(key)
    preview_id = preview_id or preview_id_of(previewed)
    asked = {"key": key, "preview_id": preview_id, "bulk_key": bulk_key}
    if (existing := asked_before(task, kind, **asked)) is not None:
        return existing, False
    preview = preview_action(task, kind, run=run, message=message, preview_id=preview_id)
    if preview.refusal:
        # The same request may have won since the look-up above: its action is what
        # was asked for, not a refusal (its delivery is why the preview refuses).
        if (existing := asked_before(task, kind, **asked)) is not None:
            return existing, False
        raise ActionRefused(preview.status, preview.refusal)
    if previewed is not None and not constant_time_compare(previewed, preview.digest):
        preview.id = new_preview_id()  # the new preview is confirmed as a request of its own
        raise PreviewChanged(preview)
    now = clock.now()
    action = Action(
        task=task,
        namespace_id=task.namespace_id,
        kind=kind,
        run_id=preview.run,
        message=(message or "").strip() or None,
        text=preview.text,
        target_thread_id=preview.target_thread,
        source=preview.source,
        reason=(reason or "").strip() or None,
        actor=user,
        actor_name=actor,
        idempotency_key=key or f"sup-{uuid.uuid4().hex}",
        confirms=preview_id,
        bulk_key=bulk_key,
        state=Action.QUEUED,
        created_at=now,
        updated_at=now,
        due_at=now + timedelta(seconds=config()["queue_grace"]),
    )
    try:
        with transaction.atomic():
            action.save()
            changes.record(ChangeKind.ACTION_REQUESTED, _subject(action), at=now)
            transaction.on_commit(lambda: _enqueue(action.pk))
    except IntegrityError:
        if (existing := asked_before(task, kind, **asked)) is not None:
            return existing, False
        if kind == "deliver":
            raise ActionRefused(
                409,
                f"run {preview.run} of this task is already being delivered or was delivered "
                "by hand (another request won)",
            ) from None
        raise
    return action, True


@dataclass
class BulkOutcome:
    created: list[Action] = field(default_factory=list)
    # Asked before by the same confirmation (or bulk key): not asked again.
    already: list[Action] = field(default_factory=list)
    refused: list[tuple[Task, str]] = field(default_factory=list)


def do_request_bulk(
    tasks,
    kind: str,
    *,
    actor: str,
    user=None,
    reason=None,
    message=None,
    previewed=None,
    preview_id: str | None = None,
    bulk_key: str | None = None,
) -> BulkOutcome:
    """The same action on each task, each on its own (one refusal stops nothing).
    `previewed` maps a task's pk to the digest of the preview shown for it: a task whose
    action changed since is refused (PreviewChanged), as on its own page. `preview_id`
    (the bulk preview's) and `bulk_key` (the request's Idempotency-Key) make the same
    confirmation sent again the same request: a task it was asked for is `already`."""
    outcome = BulkOutcome()
    for task in tasks:
        try:
            action, created = do_request_action(
                task,
                kind,
                actor=actor,
                user=user,
                reason=reason,
                message=message,
                previewed=(previewed or {}).get(task.pk),
                preview_id=preview_id,
                bulk_key=bulk_key,
            )
        except ActionRefused as exc:
            outcome.refused.append((task, str(exc)))
        else:
            (outcome.created if created else outcome.already).append(action)
    return outcome


def _enqueue(action_id: int, countdown: float | None = None) -> None:
    dispatch.enqueue(dispatch.PERFORM_ACTION, action_id, countdown=countdown)


# --- perform ------------------------------------------------------------------------

# Queued actions, claimed under a lease (a sending one whose lease ran out: its worker died).
ACTION_QUEUE = leases.WorkQueue(
    Action, (Action.QUEUED,), Action.SENDING, lambda pk, countdown=None: _enqueue(pk, countdown)
)


def do_claim_action(action_id: int, now: datetime) -> Action | None:
    """queued -> sending (or a sending one whose lease ran out: its worker died), with
    a new lease; None when someone else holds it, it is finished, or its attempts are
    spent (then it is failed: nothing is sent more than `max_attempts` times)."""
    cfg = config()
    with transaction.atomic():
        claimed = leases.claim(
            ACTION_QUEUE, action_id, now, lease=cfg["lease"], max_attempts=cfg["max_attempts"]
        )
        if not claimed:
            do_give_up_action(action_id, now)
            return None
        action = Action.objects.select_related("task__namespace", "source").get(pk=action_id)
        changes.record(ChangeKind.ACTION_SENDING, _subject(action), at=now, attempt=action.attempts)
    return action


@transaction.atomic
def do_give_up_action(action_id: int, now: datetime) -> bool:
    """Fail an action that is due again with every attempt spent. Its last attempt never
    recorded an answer (its worker died, or recording failed), so it may have reached
    the orchestrator: the row says so, and a new delivery's preview warns of it."""
    cfg = config()
    error = (
        f"gave up after {cfg['max_attempts']} attempts; the last one recorded no answer, so "
        "it may have been sent (each attempt carried the same idempotency key)"
    )
    failed = leases.give_up(
        ACTION_QUEUE,
        action_id,
        now,
        max_attempts=cfg["max_attempts"],
        state=Action.FAILED,
        last_error=error,
        response={"outcome": "unknown"},
        finished_at=now,
    )
    if failed:
        action = Action.objects.select_related("task").get(pk=action_id)
        changes.record(ChangeKind.ACTION_FAILED, _subject(action), at=now, error=error)
    return bool(failed)


def do_record_success(action: Action, receipt: Receipt, now: datetime) -> str:
    """Succeeded, and a delivery recorded as a manual wake. The send has happened: if
    recording the wake fails, the action is still succeeded (never sent again) and says
    what was not recorded."""
    with transaction.atomic():
        done = leases.settle(
            ACTION_QUEUE,
            action.pk,
            now,
            state=Action.SUCCEEDED,
            response=receipt.as_json(),
            last_error=None,
            finished_at=now,
        )
        if not done:  # another worker finished it first (its lease had run out)
            return leases.state_of(ACTION_QUEUE, action.pk)
        action.state = Action.SUCCEEDED
        unrecorded = {}
        if action.kind == "continue":
            try:
                with transaction.atomic():
                    record_continue(action, now)
            except Exception as exc:
                log.exception("action %s: sent, but recording the continue failed", action.pk)
                error = f"sent, but recording it as the child's manual wake failed: {exc}"
                Action.objects.filter(pk=action.pk).update(last_error=error)
                unrecorded = {"error": error}
        if action.kind == "deliver":
            try:
                with transaction.atomic():
                    record_delivery(action, now)
            except Exception as exc:
                log.exception("action %s: sent, but recording the delivery failed", action.pk)
                error = f"sent, but recording it as the parent's manual wake failed: {exc}"
                Action.objects.filter(pk=action.pk).update(last_error=error)
                unrecorded = {"error": error}
            else:
                try:
                    with transaction.atomic():
                        resolve_answered(action, now)
                except Exception:  # the flags stay open for the operator: never a lost send
                    log.exception("action %s: recorded, but resolving its flags failed", action.pk)
        changes.record(
            ChangeKind.ACTION_SUCCEEDED,
            _subject(action),
            at=now,
            duplicate=receipt.duplicate,
            **unrecorded,
        )
    return Action.SUCCEEDED


def do_record_failure(
    action: Action, error: str, now: datetime, *, retryable: bool, detail: str = ""
) -> str:
    """Retry later with backoff while attempts remain and it may help; else failed."""
    cfg = config()
    again = retryable and action.attempts < cfg["max_attempts"]
    delay = leases.backoff(cfg["backoff"], action.attempts)
    state = Action.QUEUED if again else Action.FAILED
    response = {"detail": detail[:2000]} if detail else {}
    if retryable and not again:  # a timeout or a 5xx: it may have got through
        response["outcome"] = "unknown"
    with transaction.atomic():
        done = leases.settle(
            ACTION_QUEUE,
            action.pk,
            now,
            state=state,
            last_error=error,
            response=response,
            # The sweep picks a queued action up again if its retry message is lost.
            due_at=now + timedelta(seconds=delay + cfg["queue_grace"]),
            finished_at=None if again else now,
        )
        if not done:
            return leases.state_of(ACTION_QUEUE, action.pk)
        action.state = state
        if again:
            changes.record(
                ChangeKind.ACTION_RETRYING, _subject(action), at=now, error=error, retry_in=delay
            )
            leases.retry_on_commit(ACTION_QUEUE, action.pk, delay)
        else:
            changes.record(ChangeKind.ACTION_FAILED, _subject(action), at=now, error=error)
    return state


def internal_source(namespace) -> Source:
    """Supervisor's own source in a namespace, which records deliveries made by hand."""
    source = Source.objects.filter(namespace=namespace, internal=True).first()
    if source is None:
        source, _ = Source.objects.get_or_create(
            name=internal_source_name(namespace.name),
            defaults={
                "namespace": namespace,
                "internal": True,
                # No token can match: the hash of a random secret nobody keeps.
                "token_hash": Source.hash_token(secrets.token_urlsafe(32)),
                "token_prefix": "(internal)",
                "scopes": "",
            },
        )
    if not source.internal or source.namespace_id != namespace.pk:
        # Never record a delivery through it: it would land in the other source's namespace.
        raise RuntimeError(
            f"{source.name!r} is a source made by hand (in namespace "
            f"{source.namespace.name!r}) under the name of the internal source of namespace "
            f"{namespace.name!r}, which is kept for Supervisor: rename it"
        )
    return source


def record_delivery(action: Action, now: datetime) -> None:
    """A confirmed delivery as a `manual` wake to the parent (contract §4): it is how
    the delivery flags learn that the result has reached the parent."""
    _record_manual_wake(action, now, "delivery:", "delivery")


def record_continue(action: Action, now: datetime) -> None:
    """A confirmed continue as a `manual` wake of the task to its child thread (contract
    §4, rule 5): the run the child starts for it names the wake in its trigger, and the
    task owns that run; a wake no run starts shows as `stuck`, as any wake does."""
    _record_manual_wake(action, now, "continue:", "continue")


def _record_manual_wake(action: Action, now: datetime, prefix: str, what: str) -> None:
    """The action's `manual` wake to its target thread, from the internal source."""
    task = action.task
    event = {
        "id": key_id(prefix, action.idempotency_key),
        "type": "wake.queued",
        "at": now.isoformat(),
        "env": SUPERVISOR_ENV,
        "data": {
            "wake": action.wake,
            "thread": action.target_thread_id,
            "source": {"kind": "manual", "task": task.task_id},
            "summary": action.text,
        },
    }
    result = do_ingest(internal_source(task.namespace), [event])
    if result.rejected:
        raise RuntimeError(f"recording {what} {action.pk} failed: {result.rejected}")


def actor_words(actor_name: str | None) -> str:
    """`user:alice` as an operator reads it: alice (a source's name stays as it is)."""
    name = actor_name or "someone"
    return name.removeprefix("user:")


def resolve_answered(action: Action, now: datetime) -> list[Flag]:
    """After a recorded delivery, resolve the task's failure flags it answers (the parent
    now holds the child's later result), saying by whom; the rules resolve the delivery
    flags themselves on their next evaluation. Kept resolved while their condition
    holds, as a resolution by hand is. Idempotent: a resolved flag is left alone."""
    task = action.task
    snap = load_for_task(task)
    view = snap.tasks[task.task_id]
    flags = {
        f.kind: f
        for f in task.flags.filter(state=Flag.OPEN, kind__in=action_outcomes.FAILURE_KINDS)
    }
    answers, _ = action_outcomes.outcomes(snap, view, "deliver", flags, run=action.run_id)
    reason = (
        f"resolved by the delivery by hand of {ownership.run_name(snap.runs.get(action.run_id))} "
        f"by {actor_words(action.actor_name)}"
    )
    return [
        flags[kind]
        for kind, _ in answers
        if do_resolve_flag(flags[kind], now, reason=reason, suppress=True)
    ]


# --- sweep --------------------------------------------------------------------------


def requeue_due_actions(now: datetime, limit: int = 500) -> int:
    """Enqueue actions left queued past their time, and put back those sending past
    their lease (their worker died). Each is pushed to later first, so a busy worker
    does not find a pile of copies when it gets to them."""
    cfg = config()
    return leases.requeue_due(
        ACTION_QUEUE,
        now,
        grace=cfg["queue_grace"],
        limit=limit,
        max_attempts=cfg["max_attempts"],
        give_up_row=do_give_up_action,
    )
