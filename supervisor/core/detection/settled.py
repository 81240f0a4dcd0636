"""Settled tasks: those whose flags no event on their parent thread can change.

An event on a parent thread (a run of the parent, a wake to it, a task delegated from
it) had every task delegated from that thread judged again: with twenty tasks under a
parent, eight tasks judged for each one an event touched, and most of them long done.
Of the rules, only those about a result that has not reached the parent read the
parent's runs and wakes (never_delivered: a parent with no run under way; the reading:
a wake delivered there or a wake run started), and only while the task's report is not
terminal do the others read its parent's activity (silent_background_item).

So a task is settled when, judged just now: its current report is terminal, a result
of it reached the parent (`reading.delivered_to_parent`), no rule found a flag on it
(open, suppressed or failed to judge) and no time-based rule is due on it. What can
change that reaches it by another path, each of which has it judged again: its own
reports and its child thread's runs, items and wakes; the wakes naming it; its
follow-ups; a task of the same title beside it; an action on it.
"""

from __future__ import annotations

from collections.abc import Iterable

from supervisor.core.facts import reading
from supervisor.core.facts.snapshot import Finding, Snapshot


def settled_tasks(
    snap: Snapshot,
    task_ids: Iterable[str],
    findings: Iterable[Finding],
    due: dict,
    failed: bool,
) -> set[str]:
    """Of `task_ids` (judged on `snap`), those settled (see the module)."""
    if failed:
        return set()
    flagged = {f.subject_id for f in findings if f.subject_type == "task"}
    settled = set()
    for task_id in task_ids:
        task = snap.tasks.get(task_id)
        if task is None or task_id in flagged or due.get(("task", task_id)) is not None:
            continue
        report = task.current_report
        if report is not None and report.terminal and reading.delivered_to_parent(snap, task):
            settled.add(task_id)
    return settled
