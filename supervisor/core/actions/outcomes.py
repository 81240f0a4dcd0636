"""What an action answers: which open flags of a task it settles, and which stay open
after it, and why (issue 19). Pure functions over a Snapshot, shared by the preview
(said before confirming), the page's suggestions and the record of a delivery.

The rules stay the contract's (§5): `failed_while_running` and `transient_failure`
resolve by the rules only when the orchestrator reports the task again. A confirmed
delivery of the child's later result is the one thing Supervisor knows to answer them
on its own: the parent then holds the real answer, recorded as a manual wake.

The latest result and what reached the parent are `core.facts.reading`'s, by the
contract's words (§4), as the delivery flags judge them.
"""

from __future__ import annotations

from supervisor.core.contract.connectors import DELIVERY_WAKE_PREFIX
from supervisor.core.facts import ownership, reading
from supervisor.core.facts.snapshot import RunView, Snapshot, TaskView
from supervisor.core.flags.kinds import BY_DELIVERY, BY_REASON, BY_REPORT, answered_by, kind_of
from supervisor.core.rules import completed_on_failure
from supervisor.core.rules.failed_while_running import GAVE_UP, baseline

# Judged by the rules from what reached the parent: a recorded delivery resolves them.
DELIVERY_KINDS = answered_by(BY_DELIVERY)
# About a failed report while the child went on, or on a passing fault.
FAILURE_KINDS = answered_by(BY_REPORT)


def later_results(snap: Snapshot, view: TaskView) -> list[RunView]:
    """The child's runs after a failed (or interrupted) report's run that finished
    completed with a result, newest first: the child's real answer after the failure."""
    report = view.current_report
    if report is None or report.status not in GAVE_UP:
        return []
    base = baseline(snap, view)
    found = [
        run
        for run in snap.runs_by_thread.get(ownership.child_thread(snap, view) or "", [])
        if run.ordinal is not None
        and run.ordinal > base.ordinal
        and run.finished
        and run.status == "completed"
        and ownership.has_result(run)
    ]
    return sorted(found, key=lambda r: (r.ordinal, r.id), reverse=True)


def runs_under_way(snap: Snapshot, view: TaskView) -> list[RunView]:
    """The child's runs not finished (requested or started)."""
    child = ownership.child_thread(snap, view)
    return [r for r in snap.runs_by_thread.get(child or "", []) if not r.finished]


def outcomes(
    snap: Snapshot, view: TaskView, kind: str, open_kinds, run: str | None = None
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """([(flag kind, how the action answers it)], [(flag kind, why it stays open)]) for
    the task's open flags of `open_kinds`, were `kind` (with `run`, for deliver) done."""
    answers, stays = [], []
    for flag in sorted(set(open_kinds)):
        how, why = _judge(snap, view, kind, flag, run)
        if how:
            answers.append((flag, how))
        else:
            stays.append((flag, why))
    return answers, stays


def _judge(snap, view, kind: str, flag: str, run: str | None) -> tuple[str | None, str]:
    if flag == completed_on_failure.KIND:
        return _judge_hidden_failure(snap, view, kind, run)
    if kind == "deliver":
        return _judge_deliver(snap, view, flag, run)
    if kind == "continue" and flag in FAILURE_KINDS:
        return None, (
            "the orchestrator still reports the task failed: it stays open until the "
            "orchestrator reports the task again, or until the child's later result is "
            "delivered by hand (Deliver, once the continued run has finished)"
        )
    if kind == "cancel" and flag in FAILURE_KINDS:
        return "resolves when the orchestrator reports the task cancelled", ""
    if kind_of(flag).answered_by == BY_REASON:
        return None, "it records that the task was delegated twice: resolve it with a reason"
    return None, "this action does not answer it: the orchestrator's later events may"


def _judge_deliver(snap, view, flag: str, run: str | None) -> tuple[str | None, str]:
    latest = reading.latest_result_by_contract(snap, view)
    if flag in DELIVERY_KINDS:
        if latest is not None and run == latest.id:
            return (
                "resolves once the delivery is recorded: the latest result reaches the parent",
                "",
            )
        return None, (
            f"it is about the latest result ({ownership.run_name(latest)}), not {_named(snap, run)}"
        )
    if flag in FAILURE_KINDS:
        later = {r.id for r in later_results(snap, view)}
        if run not in later:
            return None, (
                f"{_named(snap, run)} is not a later result of the child after the failed "
                "report: the parent would still hold only the failure"
            )
        going = [ownership.run_name(r) for r in runs_under_way(snap, view)]
        if flag == "failed_while_running" and going:
            return None, f"the child's {', '.join(going)} is still under way"
        return "resolved with the delivery: the parent then holds the child's later result", ""
    if kind_of(flag).answered_by == BY_REASON:
        return None, "it records that the task was delegated twice: resolve it with a reason"
    return None, "a delivery does not answer it: it is not about what the parent holds"


def _judge_hidden_failure(snap, view, kind: str, run: str | None) -> tuple[str | None, str]:
    """completed_on_failure: only a later run that completed, once its result reaches the
    parent, answers it; the failed run's own text is what the parent holds already."""
    failed = completed_on_failure.judged_run(snap, view)
    after = failed.ordinal if failed is not None and failed.ordinal is not None else 0
    if kind == "continue":
        return None, (
            "the parent holds a success that is not one: it stays open until the continued "
            "run completes and its result reaches the parent (Deliver, once it has finished)"
        )
    if kind != "deliver":
        return None, "this action does not answer it: the orchestrator's later events may"
    chosen = snap.runs.get(run or "")
    if (
        chosen is not None
        and (chosen.ordinal or 0) > after
        and chosen.status == "completed"
        and ownership.has_result(chosen)
    ):
        return "resolves once the delivery is recorded: the later result reaches the parent", ""
    return None, (
        f"{_named(snap, run)} is not a completed run after the failed "
        f"{ownership.run_name(failed)}: the parent would still hold no real result"
    )


LATER_EVENTS = "resolved: the orchestrator's later events no longer show it"


def resolved_because(snap: Snapshot, subject_type: str, subject_id: str, kind: str) -> str:
    """What resolved a flag the rules no longer find, in an operator's words: the
    delivery (by hand or by the orchestrator) that brought the latest result to the
    parent, or the orchestrator's later events."""
    view = snap.tasks.get(subject_id) if subject_type == "task" else None
    if view is None:
        return LATER_EVENTS
    if kind in DELIVERY_KINDS:
        latest = reading.latest_result_by_contract(snap, view)
        wake = reading.reaching_wake_by_contract(snap, view, latest.summary) if latest else None
        if wake is not None and wake.source_kind == "manual":
            delivery = _delivery_words(snap, view, wake.id, latest)
            return f"resolved: {delivery} brought the latest result to the parent"
        if wake is not None:
            return (
                f"resolved: the child's {ownership.run_name(latest)} finished and its result "
                f"reached the parent (wake {wake.id})"
            )
    report = view.current_report
    if report is not None:
        return f"{LATER_EVENTS} (the task is reported {report.status})"
    return LATER_EVENTS


def _named(snap: Snapshot, run_id: str | None) -> str:
    """A run given by id, as the page names it (by ordinal)."""
    return ownership.run_name(snap.runs.get(run_id or ""))


def _delivery_words(snap: Snapshot, view: TaskView, wake_id: str, run: RunView) -> str:
    from supervisor.core.models import Action

    prefix = DELIVERY_WAKE_PREFIX
    pk = wake_id.removeprefix(prefix)
    if wake_id.startswith(prefix) and pk.isdigit():
        # Ingest keeps the id to the delivery sent (own_records); the task too, to be sure.
        found = Action.objects.filter(pk=int(pk), kind="deliver", task__task_id=view.id)
        action = found.values_list("actor_name", "run_id").first()
        if action is not None:
            name = (action[0] or "someone").removeprefix("user:")
            named = _named(snap, action[1]) if action[1] else ownership.run_name(run)
            return f"the delivery by hand of {named} by {name}"
    return f"a delivery by hand (wake {wake_id})"
