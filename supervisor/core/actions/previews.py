"""What an action would do, shown before it is confirmed: the `Preview` of a cancel,
continue or delivery (the exact text, the target thread, what else it affects, or why it
cannot be done), and what a confirmation carries of it.

Each preview has an id of its own, which its confirmation carries: a confirmation sent
again, or many times at once, is the same request (one action per task and preview, by
a unique constraint); a deliberate second action takes a new preview. What a preview
carries of what it showed is keyed with the server's secret (`keyed_digest`).
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field

from django.utils.crypto import salted_hmac

from supervisor.core.actions import outcomes as action_outcomes
from supervisor.core.actions.sending import cannot_act
from supervisor.core.facts import ownership, reading
from supervisor.core.facts.loader import load_for_task
from supervisor.core.models import Action, Source, Task
from supervisor.core.rules.cancel_not_propagated import unfinished_work

KINDS = Action.KINDS
LIVE_DELIVERY_STATES = (Action.QUEUED, Action.SENDING, Action.SUCCEEDED)
PREVIEW_ASK_LIMIT = 2.0  # seconds a preview may wait on the connector's orchestrator

# The salt previews were keyed with when they lived in core/actions.py, before core had
# rooms: kept, so that previews shown before an upgrade stay valid after it.
DIGEST_SALT = "supervisor.core.actions.preview"
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
    # As the operator sees it, as the panel beside the preview does (core.facts.reading).
    if reading.reached_as_operator_sees_it(snap, view, chosen):
        preview.affects.append("This result has already reached the parent once.")
    elif (queued := reading.queued_not_taken(snap, view, chosen)) is not None:
        preview.affects.append(
            f"This result is queued for the parent (wake {queued.id}), which has not taken "
            "it yet: delivering it now hands it over twice."
        )


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
