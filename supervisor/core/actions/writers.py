"""Operators' actions on a task: cancel, continue, deliver.

A request becomes an `Action` row (with a preview first: the exact text, the target
thread, what else it affects); a worker performs it through the task's connector. The
row is the record: claiming is a compare-and-swap with a lease, the connector gets the
action's idempotency key, and the sweep re-enqueues what is left queued or whose lease
ran out. A delivery is at most once per (task, run) by a partial unique constraint.

Each preview has an id of its own, which its confirmation carries: a confirmation sent
again, or many times at once, is the same request (one action per task and preview, by
a unique constraint); a deliberate second action takes a new preview. What a preview
carries of what it showed is keyed with the server's secret (`keyed_digest`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils.crypto import constant_time_compare, salted_hmac

from supervisor.core import changes, clock, dispatch
from supervisor.core.actions import outcomes as action_outcomes
from supervisor.core.changes import ChangeKind
from supervisor.core.contract.connectors import (
    Outgoing,
    Receipt,
    SettingsError,
    connector_for,
)
from supervisor.core.contract.source_names import internal_source_name
from supervisor.core.facts import ownership, reading
from supervisor.core.facts.loader import load_for_task
from supervisor.core.flags.writers import do_resolve_flag
from supervisor.core.ingest.apply import do_ingest
from supervisor.core.ingest.own_records import SUPERVISOR_ENV
from supervisor.core.models import Action, Flag, IngestedEvent, Run, Source, Task
from supervisor.core.rules.cancel_not_propagated import unfinished_work
from supervisor.core.store import leases

log = logging.getLogger(__name__)

KINDS = Action.KINDS
LIVE_DELIVERY_STATES = (Action.QUEUED, Action.SENDING, Action.SUCCEEDED)
BULK_LIMIT = 500  # tasks one bulk action may touch
PREVIEW_ASK_LIMIT = 2.0  # seconds a preview may wait on the connector's orchestrator


def config() -> dict:
    return settings.SUPERVISOR_ACTIONS


KEY_LIMIT = 200  # characters of an idempotency key (Action.idempotency_key)
EVENT_ID_LIMIT = 200  # characters of an event id (contract §2)


def check_key(key: str) -> None:
    """An idempotency key is 1 to 200 printable ASCII characters (as the IETF draft of
    the Idempotency-Key header has it): it is stored, and sent on in headers and ids.
    ActionRefused(400) names what is wrong with one that is not."""
    if not 1 <= len(key) <= KEY_LIMIT:
        raise ActionRefused(400, f"Idempotency-Key must be 1 to {KEY_LIMIT} characters")
    for char in key:
        if not " " <= char <= "~":
            raise ActionRefused(
                400,
                f"Idempotency-Key holds U+{ord(char):04X}; use printable ASCII characters only",
            )
    if key != key.strip(" "):
        # HTTP drops a header value's outer spaces: sent on, the key would not be this one.
        raise ActionRefused(400, "Idempotency-Key must not start or end with a space")


def key_id(prefix: str, key: str, limit: int = EVENT_ID_LIMIT) -> str:
    """An id made from an idempotency key, at most `limit` characters: the key itself
    when it fits, else its SHA-256 (as unique, and the same for the same key)."""
    if len(prefix) + len(key) <= limit:
        return prefix + key
    return f"{prefix}sha256:{hashlib.sha256(key.encode()).hexdigest()}"


# Kept from before the rooms, so previews in flight stay valid.
DIGEST_SALT = "supervisor.core.actions.writers.preview"
PREVIEW_ID = re.compile(r"[0-9a-f]{16}")


def new_preview_id() -> str:
    """A preview's own id: unguessable, and another for each preview shown."""
    return secrets.token_hex(8)


def keyed_digest(*shown) -> str:
    """What a preview or a selection carries of what it showed: an HMAC-SHA256 under a
    key derived from SECRET_KEY. Unkeyed, a token that may act but not read could
    confirm a guess of a text withheld from it by hashing the guess and comparing."""
    return salted_hmac(DIGEST_SALT, json.dumps(shown), algorithm="sha256").hexdigest()[:32]


def preview_id_of(digest: str | None) -> str | None:
    """The preview id a confirmation's digest (or web selection) starts with, or None
    when it is not one a preview gave."""
    found = PREVIEW_ID.fullmatch((digest or "").partition(".")[0])
    return found.group() if found else None


class ActionRefused(Exception):
    """The action cannot be asked for: `status` 400 (a bad request) or 409 (the task's
    state forbids it: already delivered, nothing to stop, no connector)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class Preview:
    """What an action would do, shown before it is confirmed."""

    kind: str
    task: Task
    target_thread: str | None = None
    run: str | None = None
    text: str | None = None
    source: Source | None = None
    connector_label: str = ""
    affects: list[str] = field(default_factory=list)
    refusal: str | None = None  # why it cannot be done; None when it can
    status: int = 409
    # deliver: the child's other finished runs with a result, any of which may be chosen
    other_results: list[dict] = field(default_factory=list)
    # The task's open flags this action answers (kind, how), and those that stay open
    # after it (kind, why): said before confirming.
    answers: list[tuple[str, str]] = field(default_factory=list)
    stays_open: list[tuple[str, str]] = field(default_factory=list)
    stops_run: bool = False  # cancel: `run` is under way, and is stopped (not cancelled)
    # This preview's own id (a bulk preview's previews share one): its confirmation is
    # one request, however often it is sent.
    id: str = field(default_factory=new_preview_id)

    @property
    def allowed(self) -> bool:
        return self.refusal is None

    @property
    def digest(self) -> str:
        """What a confirmation carries of this preview: its id, then a keyed digest of
        what it showed. When the text, the target, the run or the connector is no
        longer what was shown, the confirmation is refused."""
        return f"{self.id}.{keyed_digest(self.id, *self.shown)}"

    @property
    def shown(self) -> list:
        return [
            self.kind,
            self.task.pk,
            self.target_thread,
            self.run,
            self.text,
            self.source.pk if self.source else None,
            self.connector_label,
        ]


class PreviewChanged(ActionRefused):
    """The action is no longer what its preview showed (409); `preview` is the new one."""

    def __init__(self, preview: Preview):
        super().__init__(
            409,
            "this action changed since its preview (its text, target thread, run or "
            "connector): nothing was sent; read the new preview and confirm again",
        )
        self.preview = preview


def selection_digest(kind: str, tasks, preview_id: str | None) -> str:
    """What a bulk confirmation from the web carries of its preview: the preview's id,
    then a keyed digest of the action and the exact tasks it showed."""
    pks = sorted(task.pk for task in tasks)
    return f"{preview_id}.{keyed_digest(preview_id, kind, pks)}"


# --- preview ------------------------------------------------------------------------


def acting_source(task: Task) -> Source | None:
    """The source that acts for a task: the one that told us of its delegation, when
    it has a connector; otherwise the first in the namespace that has one."""
    sources = list(
        Source.objects.filter(
            namespace_id=task.namespace_id, internal=False, revoked_at__isnull=True
        )
        .exclude(connector="")
        .order_by("name")
    )
    if len(sources) > 1 and task.delegated_event:
        told = set(
            IngestedEvent.objects.filter(
                source__in=sources, event_id=task.delegated_event, type="task.delegated"
            ).values_list("source_id", flat=True)
        )
        sources.sort(key=lambda s: s.pk not in told)
    return sources[0] if sources else None


def delivery_text(task: Task, run_id: str, summary: str) -> str:
    """The delivered text: a header the parent (and contract §4) can tell apart, then
    the result exactly as the child wrote it."""
    title = task.title or task.task_id
    return (
        f"[Result of task “{title}” ({task.task_id}), run {run_id}, "
        f"delivered by hand via Supervisor]\n\n{summary}"
    )


def continue_text(task: Task, message: str | None) -> str:
    if message and message.strip():
        return message.strip()
    title = task.title or task.task_id
    return (
        f"Continue the task “{title}” ({task.task_id}) from where you stopped: the error "
        "was a passing one. Report the result when you are done."
    )


def preview_action(
    task: Task,
    kind: str,
    *,
    run: str | None = None,
    message: str | None = None,
    preview_id: str | None = None,
) -> Preview:
    """What `kind` would send, where, and what else it affects; `refusal` says why not.
    `preview_id`: the id it is shown under (a bulk preview's, or the one a confirmation
    carries, to compare digests); a new one by default."""
    preview = Preview(kind=kind, task=task, id=preview_id or new_preview_id())
    if kind not in KINDS:
        preview.refusal, preview.status = (
            f"unknown action {kind!r}; choose from {', '.join(KINDS)}",
            400,
        )
        return preview
    snap = load_for_task(task)
    view = snap.tasks[task.task_id]
    child = ownership.child_thread(snap, view)
    if kind == "deliver":
        _preview_deliver(preview, snap, view, run)
    elif kind == "continue":
        _preview_continue(preview, child, message)
    else:
        _preview_cancel(preview, snap, view, child, run)
    if preview.refusal:
        return preview
    open_kinds = task.flags.filter(state="open", subject_type="task").values_list("kind", flat=True)
    preview.answers, preview.stays_open = action_outcomes.outcomes(
        snap, view, kind, open_kinds, run=preview.run
    )
    _bind_connector(preview)
    return preview


# Why a run of the child is not the task's own (§4), in an operator's words.
NOT_OWNED_BECAUSE = {
    "message": "started by a message to the child, not by the task",
    "wake": "a wake's run",
    "restart": "restarted from a run the task does not own",
    "background": "started by background work the task does not own",
    "scheduled": "a scheduled run",
}


def _not_owned_because(run) -> str:
    return NOT_OWNED_BECAUSE.get(run.trigger_kind or "", "not started by the task")


def _preview_deliver(preview: Preview, snap, view, run: str | None) -> None:
    task = preview.task
    if not task.parent_thread_id:
        preview.refusal = "the task's parent thread is not known: there is nobody to deliver to"
        return
    owned = {r.id: r for r in ownership.owned_runs(snap, view)}
    # Any finished run of the child with a result may be handed over, owned or not: a
    # child told to go on by a message may finish the task's real work in a run the
    # task does not own. The operator chooses; the preview says which is which.
    child = ownership.child_thread(snap, view)
    results = {r.id: r for r in snap.runs_by_thread.get(child or "", []) if ownership.has_result(r)}
    if run is None:
        # The default is the latest result by the contract's words (core.facts.reading).
        latest = reading.latest_result_by_contract(snap, view)
        if latest is None:
            preview.refusal = "no owned run of this task has finished with a result yet"
            _list_results(preview, results, owned, chosen=None)
            return
        run = latest.id
    chosen = owned.get(run) or results.get(run)
    if chosen is None:
        preview.refusal, preview.status = (
            f"run {run!r} is not owned by task {task.task_id} and is not a finished run of "
            "its child thread",
            400,
        )
        return
    if not chosen.finished:
        preview.refusal = f"run {run} has not finished with a result yet"
        return
    if not ownership.has_result(chosen):
        # An empty summary is no result (contract 1.1): nothing to hand over.
        preview.refusal = f"run {run} finished with an empty summary: it has no result"
        return
    _list_results(preview, results, owned, chosen=run)
    if run not in owned:
        preview.affects.append(
            f"Run {run} is not owned by the task ({_not_owned_because(chosen)}): its "
            "result is handed over because you chose it."
        )
    done = (
        Action.objects.filter(task=task, kind="deliver", run_id=run, state__in=LIVE_DELIVERY_STATES)
        .order_by("pk")
        .first()
    )
    if done is not None:
        preview.refusal = (
            f"run {run} of this task was already delivered by hand (action {done.pk}, {done.state})"
        )
        return
    preview.run = run
    preview.target_thread = task.parent_thread.thread_id
    preview.text = delivery_text(task, run, chosen.summary)
    preview.affects.append(
        f"The parent thread {preview.target_thread} is woken with this text "
        "(the orchestrator starts a run of it)."
    )
    uncertain = (
        Action.objects.filter(
            task=task, kind="deliver", run_id=run, state=Action.FAILED, response__outcome="unknown"
        )
        .order_by("-pk")
        .first()
    )
    if uncertain is not None:
        preview.affects.append(
            f"An earlier delivery of run {run} (action {uncertain.pk}) failed without a "
            "clear answer and may have reached the parent: look at the parent thread first."
        )
    if reading.reached_by_contract(snap, view, chosen.summary):  # the contract's words
        preview.affects.append("This result has already reached the parent once.")


def _preview_continue(preview: Preview, child: str | None, message: str | None) -> None:
    if child is None:
        preview.refusal = "the task's child thread is not known yet: there is nothing to continue"
        return
    preview.target_thread = child
    preview.text = continue_text(preview.task, message)
    preview.affects.append(
        f"The child thread {child} gets this message and starts a new run; a run started "
        "by a message is a follow-up (contract §4): its result is not counted as this "
        "task's latest result."
    )


def nothing_to_cancel(snap, view) -> str | None:
    """Why a cancel cannot apply to the task now, or None: its report is terminal and no
    run of its child is under way (a task reported failed whose child goes on can still
    be stopped)."""
    report = view.current_report
    if report is None or not report.terminal:
        return None
    child = ownership.child_thread(snap, view)
    if child and any(r.thread == child and not r.finished for r in snap.runs.values()):
        return None
    if report.status == "cancelled" and report.cause != "restart":
        _, items, tasks = unfinished_work(snap, view, report)
        going = [f"sub-task {sub.id} (cancel it on its own page)" for sub in tasks]
        going += [
            f"background item {item.id} (stop it in the orchestrator: it has no command "
            "to stop one)"
            for item in items
        ]
        if going:
            # Not "nothing to cancel" beside a flag saying the work goes on: where it is.
            return (
                "no run of the child is under way for a cancel to stop; what goes on is "
                + " and ".join(going)
            )
    return (
        f"the task has finished ({report.status}) and no run of its child is under way: "
        "there is nothing to cancel"
    )


def _preview_cancel(preview: Preview, snap, view, child: str | None, run: str | None) -> None:
    if unfit := nothing_to_cancel(snap, view):
        preview.refusal = unfit
        return
    if child is None:
        preview.refusal = "the task's child thread is not known yet: there is nothing to stop"
        return
    running = [r for r in snap.runs.values() if r.thread == child and not r.finished]
    if run is not None and run not in {r.id for r in running}:
        preview.refusal = f"run {run!r} is not a running run of the child thread {child}"
        return
    if run is None and running:
        # The run under way is the one to stop; work queued behind it is cancelled too.
        started = [r for r in running if r.started_event] or running
        run = max(started, key=lambda r: (r.ordinal or 0, r.id)).id
    preview.run = run
    preview.target_thread = child
    queued = sorted(r.id for r in running if not r.started_event)
    if run and run not in queued:
        preview.stops_run = True
        preview.affects.append(f"Run {run} of the child thread {child} is stopped.")
    if queued:
        preview.affects.append(
            f"Work queued on the child thread is cancelled where the orchestrator can: run "
            f"{', '.join(queued)}."
        )
    if not run:
        preview.affects.append(
            f"No run of the child thread {child} is known to be running; the orchestrator "
            "is asked to stop the thread's work anyway."
        )
    if preview.task.status not in ("cancelled", "interrupted"):
        preview.affects.append("The orchestrator should then report the task cancelled.")


def cannot_act(task: Task, kind: str):
    """(why no connector can send `kind` for the task, or None; the source, the connector)."""
    source = acting_source(task)
    if source is None:
        return (
            f"no source of namespace {task.namespace.name!r} has a connector: bind one "
            "(Sources page) so Supervisor can act",
            None,
            None,
        )
    try:
        connector = connector_for(source)
    except SettingsError as exc:
        return f"source {source.name}'s connector is misconfigured: {exc}", source, None
    if not connector.capabilities().allows(kind):
        what = "stop runs" if kind == "cancel" else "send messages"
        return f"the {connector.label} connector of {source.name} cannot {what}", source, None
    return None, source, connector


def _bind_connector(preview: Preview) -> None:
    refusal, source, connector = cannot_act(preview.task, preview.kind)
    if refusal:
        preview.refusal = refusal
        return
    if preview.kind == "cancel" and preview.run is None and connector.capabilities().stop_needs_run:
        preview.refusal = (
            f"no run of the child thread {preview.target_thread} is running, and "
            f"{connector.label} stops runs, not threads: there is nothing to stop"
        )
        return
    preview.source, preview.connector_label = source, connector.label
    # Asked only for a run under way: a queued run is cancelled, and nothing starts.
    stops = preview.kind == "cancel" and preview.stops_run
    if stops and (why := connector.queue_on_stop(timeout=PREVIEW_ASK_LIMIT)):
        preview.affects.append(
            f"Work queued on the child thread may start once run {preview.run} stops: "
            f"{why}. What Supervisor knows to be queued is cancelled first; what "
            "queued since may start (the outcome says what started)."
        )


def _list_results(preview: Preview, results: dict, owned: dict, *, chosen: str | None) -> None:
    """The child's finished runs with a result, other than the one chosen, newest first."""
    preview.other_results = [
        {
            "run": r.id,
            "ordinal": r.ordinal,
            "owned": r.id in owned,
            "why": None if r.id in owned else _not_owned_because(r),
            "finished_at": r.finished_at,
            "summary": r.summary,
        }
        for r in sorted(results.values(), key=lambda r: (r.ordinal or 0, r.id), reverse=True)
        if r.id != chosen
    ]


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


def bulk_asked_before(
    kind: str, *, preview_id: str | None, bulk_key: str | None = None, namespace=None
) -> list[Action]:
    """The actions a bulk confirmation of this preview, or a bulk request with this key,
    asked for before (in the namespace named `namespace` when given: a token's).
    ActionRefused(409) when the key asked for another action (a preview's id is bound
    to its action by its digest)."""
    if not (preview_id or bulk_key):
        return []
    found = Action.objects.filter(
        (Q(confirms=preview_id) if preview_id else Q())
        | (Q(bulk_key=bulk_key) if bulk_key else Q())
    )
    if namespace is not None:
        found = found.filter(namespace__name=namespace)
    earlier = list(found.select_related("task__namespace").order_by("pk"))
    if bulk_key and any(a.bulk_key == bulk_key and a.kind != kind for a in earlier):
        raise ActionRefused(409, KEY_REUSED)
    return [action for action in earlier if action.kind == kind]


def asked_before(
    task: Task, kind: str, *, key: str | None, preview_id: str | None, bulk_key: str | None
) -> Action | None:
    """The action the same request asked for before: by its idempotency key (the
    namespace's), by the preview it confirms, or by its bulk request's key."""
    if key and (existing := _action_with_key(task, key)) is not None:
        return _same_request(existing, task, kind)
    for field_name, value, refusal in (
        ("confirms", preview_id, PREVIEW_REUSED),
        ("bulk_key", bulk_key, KEY_REUSED),
    ):
        if value:
            existing = Action.objects.filter(task=task, **{field_name: value}).first()
            if existing is not None:
                return _same_request(existing, task, kind, refusal)
    return None


def _action_with_key(task: Task, key: str) -> Action | None:
    """The action the key asked for in the task's namespace: keys are each namespace's."""
    found = Action.objects.filter(namespace_id=task.namespace_id, idempotency_key=key)
    return found.select_related("task").first()


KEY_REUSED = "this idempotency key was used for another action; use a new key"
PREVIEW_REUSED = "this preview was confirmed for another action; preview again"


def _same_request(existing: Action, task: Task, kind: str, refusal: str = KEY_REUSED) -> Action:
    if existing.task_id != task.pk or existing.kind != kind:
        raise ActionRefused(409, refusal)
    return existing


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


def outgoing_for(action: Action) -> Outgoing:
    task = action.task
    return Outgoing(
        action_id=action.pk,
        kind=action.kind,
        idempotency_key=action.sent_key,
        namespace=task.namespace.name,
        task_id=task.task_id,
        task_title=task.title,
        thread_id=action.target_thread_id or "",
        run_id=action.run_id,
        text=action.text,
        actor=action.actor_name,
        reason=action.reason,
        queued_runs=queued_runs(action) if action.kind == "cancel" else (),
    )


def queued_runs(action: Action) -> tuple[str, ...]:
    """The child's runs requested and not started (the action's own run too, when no run
    was under way), as the mirror has them when the cancel is sent, not when it was
    previewed: what queued since is the child's work too."""
    found = Run.objects.filter(
        namespace_id=action.task.namespace_id,
        thread__thread_id=action.target_thread_id,
        started_event__isnull=True,
        finished_event__isnull=True,
    )
    return tuple(found.order_by("ordinal", "run_id").values_list("run_id", flat=True))


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
    task = action.task
    event = {
        "id": key_id("delivery:", action.idempotency_key),
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
        raise RuntimeError(f"recording delivery {action.pk} failed: {result.rejected}")


def record_continue(action: Action, now: datetime) -> None:
    """A confirmed continue as a `manual` wake of the task to its child thread (contract
    §4, rule 5): the run the child starts for it names the wake in its trigger, and the
    task owns that run; a wake no run starts shows as `stuck`, as any wake does."""
    task = action.task
    event = {
        "id": key_id("continue:", action.idempotency_key),
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
        raise RuntimeError(f"recording continue {action.pk} failed: {result.rejected}")


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
