"""What only Supervisor may say: its own environment, and the wakes it records for the
deliveries and continues it sent (contract §4). Supervisor records those through its
internal source; an orchestrator may report back a wake Supervisor sent it (the wake it
queued for a delivery, the run it started for a continue), but no source may make one
up: a wake under `supervisor:delivery:` that no delivery was sent as would read as a
delivery by hand and resolve the flags that call for one (issue 39).

Refused at ingest, as a dead letter naming the field, rather than kept and discounted
when read: the orchestrator learns at once that it sent something wrong, and nothing
that is stored has to be told apart from Supervisor's own records afterwards."""

from __future__ import annotations

import json

from supervisor.core.contract.connectors import SUPERVISOR_WAKE_PREFIXES
from supervisor.core.contract.events import Event
from supervisor.core.models import Action, Source

SUPERVISOR_ENV = "supervisor"  # the environment of Supervisor's own events (its clock)


def refused_claims(source: Source, events: list[Event]) -> dict[str, str]:
    """The events of `events` that speak in Supervisor's name without being its own, by
    id, each with why (the field first, as every dead letter says it)."""
    if source.internal:
        return {}
    refused: dict[str, str] = {}
    claims: list[Event] = []
    for event in events:
        if event.env == SUPERVISOR_ENV:
            refused[event.id] = (
                f'env: "{SUPERVISOR_ENV}" is Supervisor\'s own environment, where it records '
                "the actions it sent; report what happened under the environment it happened on"
            )
        elif event.type == "wake.queued" and event.data.wake.startswith(SUPERVISOR_WAKE_PREFIXES):
            claims.append(event)
    if claims:
        sent = _sent_wakes(source.namespace_id, {e.data.source.task for e in claims})
        for event in claims:
            why = _not_as_sent(event, sent.get(event.data.wake))
            if why:
                refused[event.id] = why
    return refused


def _sent_wakes(namespace_id: int, task_ids: set[str | None]) -> dict[str, Action]:
    """The wakes of the deliveries and continues of these tasks that Supervisor sent (a
    worker took them at least once: the orchestrator may answer before the worker
    records that it succeeded), by wake id."""
    sent = Action.objects.filter(
        namespace_id=namespace_id,
        task__task_id__in=[t for t in task_ids if t],
        kind__in=("deliver", "continue"),
        attempts__gt=0,
    ).select_related("task")
    return {action.wake: action for action in sent}


def _not_as_sent(event: Event, action: Action | None) -> str | None:
    """Why this report of one of Supervisor's wakes is not the wake it sent, or None."""
    data = event.data
    if action is None:
        named = f" of task {data.source.task!r}" if data.source.task else ""
        return (
            f"data.wake: {data.wake!r} is an id Supervisor gives the deliveries and "
            f"continues it sends, and it sent none{named} under it in this namespace; "
            "name a wake of your own"
        )
    task = action.task.task_id
    if (data.source.kind, data.source.task) != ("manual", task):
        source = json.dumps({"kind": "manual", "task": task})
        return (
            f"data.source: wake {data.wake!r} is Supervisor's {action.kind} of task {task!r}, "
            f"so its source is {source}"
        )
    if data.thread != action.target_thread_id:
        return (
            f"data.thread: wake {data.wake!r} is Supervisor's {action.kind} of task {task!r} "
            f"to thread {action.target_thread_id!r}, not {data.thread!r}"
        )
    return None
