"""What a change in the log concerns: the notes the relay sends and a resume replays.

A note is a plain dict (it travels through the channel layer): the change id and kind,
the pks of the tasks and threads whose pages it changes, and the flag it opened.
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Q

from supervisor.core.models import Change, Task, Thread

BATCH = 500


def notes_after(after: int, limit: int = BATCH) -> list[dict]:
    """Notes for the changes after `after`, oldest first (a handful of queries a batch)."""
    changes = list(
        Change.objects.filter(id__gt=after)
        .order_by("id")
        .values("id", "kind", "namespace_id", "subject_type", "subject_id", "payload")[:limit]
    )
    if not changes:
        return []
    wanted = defaultdict(lambda: defaultdict(set))
    for change in changes:
        wanted[change["subject_type"]][change["namespace_id"]].add(change["subject_id"])
    task_pks = _task_pks(wanted["task"])
    thread_pks = _thread_pks(wanted["thread"])
    tasks_of_thread = _tasks_of_threads(set(thread_pks.values()))
    notes = []
    for change in changes:
        key = (change["namespace_id"], change["subject_id"])
        tasks, threads = set(), set()
        if change["subject_type"] == "task" and key in task_pks:
            tasks.add(task_pks[key])
        if change["subject_type"] == "thread" and key in thread_pks:
            threads.add(thread_pks[key])
            tasks |= tasks_of_thread.get(thread_pks[key], set())
        kind = change["kind"]
        notes.append(
            {
                "type": "change.note",
                "id": change["id"],
                "kind": kind,
                "tasks": sorted(tasks),
                "threads": sorted(threads),
                "flag": change["payload"].get("flag") if kind == "flag.opened" else None,
            }
        )
    return notes


def _task_pks(ids_by_namespace) -> dict:
    query = Q(pk__in=[])
    for namespace_id, ids in ids_by_namespace.items():
        query |= Q(namespace_id=namespace_id, task_id__in=ids)
    return {
        (ns, task_id): pk
        for pk, ns, task_id in Task.objects.filter(query).values_list(
            "pk", "namespace_id", "task_id"
        )
    }


def _thread_pks(ids_by_namespace) -> dict:
    query = Q(pk__in=[])
    for namespace_id, ids in ids_by_namespace.items():
        query |= Q(namespace_id=namespace_id, thread_id__in=ids)
    return {
        (ns, thread_id): pk
        for pk, ns, thread_id in Thread.objects.filter(query).values_list(
            "pk", "namespace_id", "thread_id"
        )
    }


def _tasks_of_threads(thread_pks: set[int]) -> dict[int, set[int]]:
    """Tasks whose child or parent thread changed: their pages show its runs and wakes."""
    found = defaultdict(set)
    rows = Task.objects.filter(
        Q(child_thread_id__in=thread_pks) | Q(parent_thread_id__in=thread_pks), known=True
    ).values_list("pk", "child_thread_id", "parent_thread_id")
    for pk, child, parent in rows:
        for thread_pk in (child, parent):
            if thread_pk in thread_pks:
                found[thread_pk].add(pk)
    return found


def latest_change_id() -> int:
    return Change.objects.order_by("-id").values_list("id", flat=True).first() or 0
