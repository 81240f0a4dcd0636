"""Sending through connectors: which source acts for a task, whether its connector can
send an action (`cannot_act`), and what a worker hands the connector (`outgoing_for`)."""

from __future__ import annotations

from supervisor.core.contract.connectors import Outgoing, SettingsError, connector_for
from supervisor.core.models import Action, IngestedEvent, Run, Source, Task


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
