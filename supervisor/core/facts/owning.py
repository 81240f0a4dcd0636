"""Which child runs a task owns, and why (contract §4): causal, never a clock.

The ground the reading (`core.facts.reading`) and the rest of ownership
(`core.facts.ownership`, which every rule reads) stand on. Pure functions over a
Snapshot: ownership follows the causal links (triggers, the run that started an item,
the run a task was delegated from), memoised on the snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from supervisor.core.facts.snapshot import ItemView, RunView, Snapshot, TaskView, WakeView

# Sort keys for times that may not be known yet (placeholders): unknown sorts first/last.
EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


def child_thread(snap: Snapshot, task: TaskView) -> str | None:
    """T's child thread; while the delegation has not named it, the thread of T's first run."""
    if task.child_thread is not None:
        return task.child_thread
    if "first_runs" not in snap.memo:
        # Should two runs claim to be T's first, the lower ordinal wins (the loader
        # agrees). Every task's at once: a scan of the runs per task was quadratic.
        first: dict[str, RunView] = {}
        for run in snap.runs.values():
            if run.trigger_kind == "delegation" and run.trigger_ref is not None:
                held = first.get(run.trigger_ref)
                if held is None or (run.ordinal or 0, run.id) < (held.ordinal or 0, held.id):
                    first[run.trigger_ref] = run
        snap.memo["first_runs"] = first
    run = snap.memo["first_runs"].get(task.id)
    return run.thread if run else None


def run_requested_by(snap: Snapshot, thread: str | None, at: datetime | None) -> RunView | None:
    """The latest run of `thread` requested at or before `at` (the contract's fallback
    when an event does not name its run)."""
    if thread is None or at is None:
        return None
    earlier = [
        run
        for run in snap.runs_by_thread.get(thread, [])
        if run.ordinal is not None and run.requested_at is not None and run.requested_at <= at
    ]
    return max(earlier, key=lambda r: r.ordinal, default=None)


def item_run_id(snap: Snapshot, item: ItemView) -> str | None:
    """The run that started a background item: as sent, else by the contract's fallback."""
    if item.run is not None:
        return item.run
    run = run_requested_by(snap, item.thread, item.started_at)
    return run.id if run else None


def delegating_run_id(snap: Snapshot, task: TaskView) -> str | None:
    """The parent run a task was delegated from.

    `parent_run` is optional in the contract; without it we take the latest run of the
    parent thread requested at or before the delegation, the same fallback the contract
    gives `background.started` for its run.
    """
    if task.parent_run is not None:
        return task.parent_run
    run = run_requested_by(snap, task.parent_thread, task.delegated_at)
    return run.id if run else None


def awaited(item: ItemView) -> bool:
    """Only an explicit `awaited: false` lets a task ignore its item."""
    return item.awaited is not False


def owned_runs(snap: Snapshot, task: TaskView) -> list[RunView]:
    """The runs of T's child thread that T owns (§4), by ordinal; none for a follow-up."""
    if task.follow_up_of is not None:
        return []
    key = ("owned_runs", task.id)
    if key not in snap.memo:
        snap.memo[key] = _owned_runs(snap, task)
    return list(snap.memo[key])


def _owned_runs(snap: Snapshot, task: TaskView) -> tuple[RunView, ...]:
    runs = snap.runs_by_thread.get(child_thread(snap, task) or "", [])
    owned: set[str] = set()
    grew = True
    while grew:  # each clause may depend on runs owned through another: to a fixed point
        grew = False
        for run in runs:
            if run.id not in owned and _trigger(snap, task, run, owned).owned:
                owned.add(run.id)
                grew = True
    return tuple(run for run in runs if run.id in owned)


@dataclass(frozen=True)
class Owning:
    """Whether a task owns a run, and why, in an operator's words."""

    owned: bool
    why: str  # "first run", "woken by item i1 (started with awaited: false)", ...

    @property
    def words(self) -> str:
        return ("owned: " if self.owned else "not owned: ") + self.why


def owning(snap: Snapshot, task: TaskView, run: RunView) -> Owning:
    """Whether T owns `run` and why: the same clauses that decide `owned_runs`, read
    once the owned runs are known."""
    if task.follow_up_of is not None:
        return Owning(False, f"this task follows up {task.follow_up_of} and owns no runs")
    key = ("owned_run_ids", task.id)
    if key not in snap.memo:
        snap.memo[key] = frozenset(r.id for r in owned_runs(snap, task))
    owned = snap.memo[key]
    return Owning(run.id in owned, _trigger(snap, task, run, owned).why)


def _trigger(snap: Snapshot, task: TaskView, run: RunView, owned: set[str]) -> Owning:
    """Whether `run` was triggered by T's delegation or by a run in `owned`, and how."""
    kind, ref = run.trigger_kind, run.trigger_ref
    if kind == "delegation":
        return Owning(ref == task.id, "first run" if ref == task.id else f"first run of task {ref}")
    if kind == "restart":
        return Owning(ref in owned, f"restart of {ref}")
    if kind == "background":
        item = snap.items.get(ref or "")
        if _started_by_owned(snap, item, owned):
            return Owning(True, f"woken by item {ref}")
        if item is not None and item.awaited is False:
            return Owning(False, f"woken by item {ref} (started with awaited: false)")
        return Owning(False, f"woken by item {ref} (not started by an owned run)")
    if kind == "wake":
        return _woken(snap, task, snap.wakes.get(ref or ""), ref, owned)
    if kind == "message":
        return Owning(False, "message-started follow-up")
    if kind == "scheduled":
        return Owning(False, "scheduled follow-up")
    if kind is None:
        return Owning(False, "trigger not known yet")
    return Owning(False, f"{kind} trigger")


def _woken(
    snap: Snapshot, task: TaskView, wake: WakeView | None, ref: str | None, owned: set[str]
) -> Owning:
    why = f"woken by wake {ref}"
    if wake is None:
        return Owning(False, why)
    if wake.source_kind == "background":
        why += f" (item {wake.source_item} finished)"
        if wake.outcome == "updated":  # a progress notice: the item goes on, it wakes no owner
            return Owning(False, why + ", a progress notice")
        return Owning(_started_by_owned(snap, snap.items.get(wake.source_item or ""), owned), why)
    if wake.source_kind == "task":
        source = snap.tasks.get(wake.source_task or "")
        owns = source is not None and delegating_run_id(snap, source) in owned
        return Owning(owns, why + f" (task {wake.source_task} reported)")
    if wake.source_kind == "manual" and wake.source_task == task.id:
        # Rule 5: a continue of T sent by hand, whatever its message says; a delivery by
        # hand of T goes to the parent, not to the child.
        if wake.thread is not None and wake.thread == child_thread(snap, task):
            return Owning(True, why + " (a continue of this task sent by hand)")
        return Owning(False, why + f" (a manual wake of this task to {wake.thread})")
    if wake.source_kind == "manual":
        return Owning(False, why + f" (sent by hand for task {wake.source_task})")
    if wake.source_kind:
        return Owning(False, why + f" ({wake.source_kind})")
    return Owning(False, why)


def _started_by_owned(snap: Snapshot, item: ItemView | None, owned: set[str]) -> bool:
    return item is not None and awaited(item) and item_run_id(snap, item) in owned
