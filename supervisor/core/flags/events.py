"""The raw events behind a flag: what an operator reads to check a rule's judgement.

A flag's evidence names the events it rests on (`evidence["events"]`); a task's flag
also rests on the rest of what its rule read: the task's own events (its delegation and
reports) and those of the runs, background items and wakes of its child thread and of
the wakes that concern it, as the task page shows them (`task_detail.describe_task`).
The events named in the evidence always come first; the others are the newest `limit`,
and how many were left off is said, so a task with ten thousand runs stays one page.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC

from supervisor.core.facts.loader import load_for_task
from supervisor.core.facts.task_detail import describe_task
from supervisor.core.models import Flag, IngestedEvent, Source

LIMIT = 50


@dataclass(frozen=True)
class RawEvents:
    named: list[IngestedEvent]  # named by the flag's evidence, oldest first
    others: list[IngestedEvent]  # the rest the rule read, the newest `limit`, oldest first
    left_off: int  # of the others
    missing: list[str]  # ids the evidence names that were never stored (or were pruned)


def as_sent(event: IngestedEvent) -> dict:
    """An event in the contract's shape: its stored fields around its stored `data`."""
    body = {
        "id": event.event_id,
        "type": event.type,
        "at": event.at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
    }
    if event.env:
        body["env"] = event.env
    return body | {"data": event.data}


def evidence_ids(flag: Flag) -> list[str]:
    evidence = flag.evidence if isinstance(flag.evidence, dict) else {}
    named = evidence.get("events") or []
    return list(dict.fromkeys(e for e in named if isinstance(e, str) and e))


def read_ids(flag: Flag) -> set[str]:
    """The ids of every event the rule read for the flag's task (none for other flags)."""
    task = flag.task
    if task is None or not task.known:
        return set()
    detail = describe_task(task, load_for_task(task))
    view = detail.task
    ids = {view.delegated_event, *(r.event_id for r in view.reports)}
    for run in detail.runs:
        ids |= {run.requested_event, run.started_event, run.finished_event, run.activity_event}
    for item in detail.items:
        ids |= {item.started_event, item.finished_event}
    for wake in detail.wakes:
        ids |= {wake.queued_event, wake.delivered_event}
    return {i for i in ids if i}


def raw_events(flag: Flag, limit: int = LIMIT) -> RawEvents:
    """The stored events behind `flag`, bounded to `limit` of each part."""
    named_ids = evidence_ids(flag)
    # Ids are unique per source; the sources of a namespace share its ids (models.Source).
    sources = list(
        Source.objects.filter(namespace_id=flag.namespace_id).values_list("pk", flat=True)
    )
    stored = IngestedEvent.objects.filter(source_id__any_of=sources).select_related("source")
    named = list(stored.filter(event_id__any_of=named_ids[:limit]).order_by("at", "pk"))
    found = {e.event_id for e in named}
    other_ids = read_ids(flag) - set(named_ids)
    others_query = stored.filter(event_id__any_of=other_ids)
    others = list(others_query.order_by("-at", "-pk")[:limit])
    left_off = others_query.count() - len(others) if len(others) == limit else 0
    return RawEvents(
        named=named,
        others=others[::-1],
        left_off=left_off,
        missing=[e for e in named_ids[:limit] if e not in found],
    )
