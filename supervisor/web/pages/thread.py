"""The thread page: the tasks a thread delegated, their children's tasks and so on (a
tree of bounded depth), the thread's own flags, its newest runs with the task that owns
each, and a timeline of its runs, wakes and background items."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Case, F, Value, When

from supervisor.core import clock
from supervisor.core.facts import ownership
from supervisor.core.facts.loader import load_for_subjects
from supervisor.core.models import BackgroundItem, Flag, Run, Task, Thread, Wake
from supervisor.core.queries.overview import severity_rank
from supervisor.core.triage import silences

from ..problems import problems_of
from .flag_cards import flag_entry
from .task_list import known_tasks

TREE_DEPTH = 6  # levels of delegation shown below a thread
THREAD_RUNS = 25  # the newest runs listed on a thread's page
THREAD_TIMELINE = 40  # the newest runs, wakes and items each read for its timeline (> THREAD_RUNS)


@dataclass
class Step:
    """One line of a thread's timeline."""

    at: datetime | None
    kind: str
    text: str
    subject: str = ""


def thread_context(thread: Thread) -> dict:
    """A parent thread with the tasks it delegated, their children's tasks and so on,
    down to TREE_DEPTH levels: one query per level, one for all their open flags."""
    by_parent: dict[int, list[Task]] = defaultdict(list)
    seen_threads = {thread.pk}
    level = [thread.pk]
    every: list[Task] = []
    depth = 0
    truncated = False
    while level:
        if depth >= TREE_DEPTH:
            truncated = True
            break
        found = list(
            known_tasks().filter(parent_thread_id__in=level).order_by("delegated_at", "pk")
        )
        every += found
        level = []
        for task in found:
            by_parent[task.parent_thread_id].append(task)
            if task.child_thread_id and task.child_thread_id not in seen_threads:
                seen_threads.add(task.child_thread_id)
                level.append(task.child_thread_id)
        depth += 1
    found = silences.active(clock.now())
    problems = problems_of([t.pk for t in every], clock.now(), found)

    def nodes(thread_pk: int, depth: int, path: frozenset) -> list[dict]:
        out = []
        for task in by_parent.get(thread_pk, []):
            child = task.child_thread_id
            below = (
                nodes(child, depth + 1, path | {child})
                if child and child not in path and depth + 1 < TREE_DEPTH
                else []
            )
            out.append(
                {
                    "task": task,
                    "problem": problems.get(task.pk),
                    "children": below,
                    "depth": depth,
                    # Deeper levels were not read: the child thread's own page shows them.
                    "more_below": bool(child) and truncated and depth + 1 >= TREE_DEPTH,
                }
            )
        return out

    delegated_by = (
        Task.objects.filter(known=True, child_thread=thread)
        .select_related("parent_thread")
        .order_by("follow_up_of", "delegated_at", "pk")
        .first()
    )
    thread_flags = list(
        Flag.objects.filter(
            namespace_id=thread.namespace_id, subject_type="thread", subject_id=thread.thread_id
        )
        .select_related("resolved_by")  # a resolved card names who resolved it
        # Open ones as every list of problems (worst, then longest open); resolved ones,
        # the history below them, newest first.
        .alias(
            open_rank=Case(When(state=Flag.OPEN, then=severity_rank()), default=Value(0)),
            open_since=Case(When(state=Flag.OPEN, then=F("opened_at"))),
        )
        .order_by(
            "state", F("open_rank").desc(), F("open_since").asc(nulls_last=True), "-opened_at"
        )
    )
    held = silences.matching([f.pk for f in thread_flags if f.state == Flag.OPEN], found)
    return {
        "thread": thread,
        "tree": nodes(thread.pk, 0, frozenset({thread.pk})),
        "task_count": len(every),
        "truncated": truncated,
        "depth_limit": TREE_DEPTH,
        "delegated_by": delegated_by,
        "thread_flags": [flag_entry(f, silence=held.get(f.pk)) for f in thread_flags],
        "can_act": False,
    }


def thread_activity(thread: Thread) -> dict:
    """A thread's newest runs (each with its trigger, result in short, and the task that
    owns it, with why) and a timeline of its runs, wakes and background items in time
    order. Bounded: a fixed number of queries and rows, whatever the thread's length;
    only the ownership, a fixed point over the thread's runs, reads them all (as the
    task page does), and only when a known task delegated to this thread."""
    read = list(
        Run.objects.filter(thread=thread).order_by(F("ordinal").desc(nulls_last=True), "-pk")[
            :THREAD_TIMELINE
        ]
    )
    runs = read[:THREAD_RUNS]
    run_total = len(read)
    if run_total == THREAD_TIMELINE:
        run_total = Run.objects.filter(thread=thread).count()
    owners = _run_owners(thread, runs)
    rows = [{"run": run, **owners.get(run.run_id, {})} for run in runs]
    return {
        "runs": rows,
        "runs_more": run_total - len(runs),
        "run_total": run_total,
        **_thread_timeline(thread, read),
    }


def _run_owners(thread: Thread, runs: list[Run]) -> dict[str, dict]:
    """run id -> {"owner": the Task owning it or None, "why": ownership's words}."""
    tasks = {t.task_id: t for t in Task.objects.filter(known=True, child_thread=thread)}
    if not tasks or not runs:
        return {}
    snap = load_for_subjects(thread.namespace_id, set(tasks), {thread.thread_id})
    views = [snap.tasks[task_id] for task_id in tasks if task_id in snap.tasks]
    owned = {v.id: {r.id for r in ownership.owned_runs(snap, v)} for v in views}
    # A run no task owns is explained against the task delegated first, not a follow-up.
    first = min(
        views, key=lambda v: (v.follow_up_of is not None, v.delegated_at or ownership.LATEST)
    )
    out = {}
    for run in runs:
        view = snap.runs.get(run.run_id)
        if view is None:  # arrived after the snapshot was read
            continue
        owner = next((v for v in views if run.run_id in owned[v.id]), None)
        judged = owner or first
        out[run.run_id] = {
            "owner": tasks[owner.id] if owner else None,
            "why": ownership.owning(snap, judged, view).words,
        }
    return out


def _thread_timeline(thread: Thread, runs: list[Run]) -> dict:
    """The newest THREAD_TIMELINE runs (read by the caller), wakes to the thread and
    background items, as dated steps in time order. Where a kind had more, the steps
    before its oldest one read are dropped (some of that kind would be missing there)
    and `since` says so."""
    newest = THREAD_TIMELINE
    wakes = list(
        Wake.objects.filter(thread=thread).order_by(F("queued_at").desc(nulls_last=True), "-pk")[
            :newest
        ]
    )
    items = list(
        BackgroundItem.objects.filter(thread=thread).order_by(
            F("started_at").desc(nulls_last=True), "-pk"
        )[:newest]
    )
    steps: list[Step] = []
    for run in runs:
        label = f"run {run.ordinal if run.ordinal is not None else '?'}"
        trigger = run.trigger_kind or "unknown trigger"
        if run.requested_event:
            steps.append(
                Step(
                    run.requested_at, "run.requested", f"{label} requested ({trigger})", run.run_id
                )
            )
        if run.started_event:
            steps.append(Step(run.started_at, "run.started", f"{label} started", run.run_id))
        if run.finished_event:
            text = f"{label} {run.status}: {run.summary or run.error or ''}".strip().rstrip(":")
            steps.append(Step(run.finished_at, "run.finished", text, run.run_id))
    for wake in wakes:
        if wake.queued_event:
            source = wake.source_kind or "?"
            named = wake.source_task or wake.source_item or wake.source_thread
            text = f"wake queued ({source}{' ' + named if named else ''}"
            text += f", {wake.outcome})" if wake.outcome else ")"
            if wake.summary:
                text += f": {wake.summary}"
            steps.append(Step(wake.queued_at, "wake.queued", text, wake.wake_id))
        if wake.delivered_event:
            into = f" into {wake.delivered_run}" if wake.delivered_run else ""
            steps.append(
                Step(wake.delivered_at, "wake.delivered", f"wake delivered{into}", wake.wake_id)
            )
    for item in items:
        name = f"{item.kind or 'item'} {item.label or item.item_id}"
        if item.started_event:
            steps.append(
                Step(item.started_at, "background.started", f"{name} started", item.item_id)
            )
        if item.finished_event:
            status = f" ({item.finish_status})" if item.finish_status else ""
            steps.append(
                Step(
                    item.finished_at,
                    "background.finished",
                    f"{name} finished{status}",
                    item.item_id,
                )
            )
    # Where a kind was cut, its oldest row read marks how far back the timeline is whole.
    cut = [
        oldest
        for rows, when in (
            (runs, lambda r: r.requested_at or r.started_at),
            (wakes, lambda w: w.queued_at),
            (items, lambda i: i.started_at),
        )
        if len(rows) == newest and (oldest := when(rows[-1])) is not None
    ]
    since = max(cut) if cut else None
    dated = [s for s in steps if s.at is not None and (since is None or s.at >= since)]
    dated.sort(key=lambda s: (s.at, s.kind, s.subject))
    undated = [s for s in steps if s.at is None]
    return {"timeline": dated + undated, "timeline_since": since}
