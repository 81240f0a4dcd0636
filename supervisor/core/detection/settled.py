"""Settled tasks: those whose flags no event on their parent thread can change.

An event on a parent thread (a run of the parent, a wake to it, a task delegated from
it) had every task delegated from that thread judged again: with twenty tasks under a
parent, most of the tasks an evaluation judged were its siblings, judged for nothing.

What the rules read of a task's parent thread, rule by rule: only never_delivered reads
its runs (a parent with no run under way will take nothing), and only for a task whose
result is terminal, handed by wakes alone and not delivered
(`never_delivered.reads_parent_runs`). The wakes to the parent that the reading reads
(`core.facts.reading`) are T's own (their events name T), its follow-ups' (a follow-up's
events have T judged) or sent from T's child thread (judged with it). A task's
ownership reads its parent's runs only to place it under the task that owns that thread,
which that thread's events have judged. The rest reads T's own rows and its child
thread's.

So a task is settled when, judged just now, never_delivered does not read its parent's
runs for it, and no rule failed to judge it. Being settled depends on T's own report and
wakes alone: whatever changes it reaches T by its own events, which have it judged (and
this recorded) again. An arrival-order property holds it to the whole namespace's
judgement on every scenario (tests/properties/test_detection_order.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from supervisor.core.facts.snapshot import Snapshot
from supervisor.core.rules.never_delivered import reads_parent_runs


def settled_tasks(snap: Snapshot, task_ids: Iterable[str], failed: bool) -> set[str]:
    """Of `task_ids` (judged on `snap`), those settled (see the module)."""
    if failed:
        return set()
    return {
        task_id
        for task_id in task_ids
        if (task := snap.tasks.get(task_id)) is not None and not reads_parent_runs(snap, task)
    }
