"""Which child runs a task owns, and what became of their results (contract §4).

Pure functions over a Snapshot. Ownership follows the causal links (triggers, the
run that started an item, the run a task was delegated from) and never a clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from supervisor.core.facts.snapshot import ItemView, RunView, Snapshot, TaskView, WakeView

# Sort keys for times that may not be known yet (placeholders): unknown sorts first/last.
EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


def normalized(text: str | None) -> str | None:
    """A text as the contract compares it: trimmed, white space collapsed."""
    if text is None:
        return None
    return " ".join(text.split())


def run_name(run: RunView | None) -> str:
    """A run as the task page names it: by its ordinal ("run 2"), never by its raw id."""
    if run is None:
        return "no run"
    if run.ordinal is None:
        return "a run not requested yet"
    return f"run {run.ordinal}"


def known_tasks(snap: Snapshot) -> list[TaskView]:
    """The tasks whose `task.delegated` arrived: the only task subjects of flags."""
    return sorted((task for task in snap.tasks.values() if task.known), key=lambda t: t.id)


def judged_tasks(snap: Snapshot) -> list[TaskView]:
    """The known tasks whose flags this evaluation decides: every one, or the ones the
    snapshot was loaded to judge (`Snapshot.judged`); the others are only read."""
    if snap.judged is None:
        return known_tasks(snap)
    return [task for task in known_tasks(snap) if task.id in snap.judged]


def child_thread(snap: Snapshot, task: TaskView) -> str | None:
    """T's child thread; while the delegation has not named it, the thread of T's first run."""
    if task.child_thread is not None:
        return task.child_thread
    # Should two runs claim to be T's first, the lower ordinal wins (the loader agrees).
    first = min(
        (
            run
            for run in snap.runs.values()
            if run.trigger_kind == "delegation" and run.trigger_ref == task.id
        ),
        key=lambda r: (r.ordinal or 0, r.id),
        default=None,
    )
    return first.thread if first else None


def child_thread_task(snap: Snapshot, thread: str | None) -> TaskView | None:
    """The known task whose child thread is `thread`: the one that is not a follow-up,
    else the earliest delegated."""
    if thread is None:
        return None
    candidates = [task for task in known_tasks(snap) if child_thread(snap, task) == thread]
    return min(
        candidates,
        key=lambda t: (
            t.follow_up_of is not None,
            t.delegated_at or LATEST,
            t.id,
        ),
        default=None,
    )


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


def owned_items(snap: Snapshot, task: TaskView) -> list[ItemView]:
    """Background items started by T's owned runs, `awaited: false` ones included."""
    owned = {run.id for run in owned_runs(snap, task)}
    thread = child_thread(snap, task) or ""
    items = [
        item for item in snap.items_by_thread.get(thread, []) if item_run_id(snap, item) in owned
    ]
    return sorted(items, key=lambda i: (i.started_at or EARLIEST, i.id))


def delegated_tasks(snap: Snapshot, task: TaskView) -> list[TaskView]:
    """Tasks delegated from T's owned runs (T's grandchildren's tasks)."""
    owned = {run.id for run in owned_runs(snap, task)}
    thread = child_thread(snap, task) or ""
    subtasks = [
        sub
        for sub in snap.tasks_by_parent_thread.get(thread, [])
        if sub.known and delegating_run_id(snap, sub) in owned
    ]
    return sorted(subtasks, key=lambda t: (t.delegated_at or EARLIEST, t.id))


def unfinished_owned_runs(snap: Snapshot, task: TaskView) -> list[RunView]:
    return [run for run in owned_runs(snap, task) if not run.finished]


def unfinished_owned_items(snap: Snapshot, task: TaskView) -> list[ItemView]:
    """Owned items T is waiting on: not finished and not started with `awaited: false`."""
    return [item for item in owned_items(snap, task) if awaited(item) and not item.finished]


def open_delegated_tasks(snap: Snapshot, task: TaskView) -> list[TaskView]:
    """Tasks delegated from T's owned runs whose current report is not terminal (or absent)."""
    return [
        sub
        for sub in delegated_tasks(snap, task)
        if sub.current_report is None or not sub.current_report.terminal
    ]


def has_result(run: RunView) -> bool:
    """A finished run with a summary that is not empty once trimmed: an empty summary is
    no result (contract 1.1; a run cut short often ends with "")."""
    return run.finished and bool((run.summary or "").strip())


def latest_result_run(snap: Snapshot, task: TaskView) -> RunView | None:
    """The owned finished run with the highest ordinal and a result: where T's latest
    result comes from. The one definition the rules, the pages, the API and the deliver
    action read."""
    finished = [run for run in owned_runs(snap, task) if has_result(run)]
    return finished[-1] if finished else None


def latest_result(snap: Snapshot, task: TaskView) -> str | None:
    run = latest_result_run(snap, task)
    return run.summary if run else None


def result_run(snap: Snapshot, task: TaskView) -> RunView | None:
    """The run T's current report says its text came from; else the highest owned finished
    run with that text; else none."""
    report = task.current_report
    if report is None:
        return None
    if report.result_run is not None:
        # Named but not described yet: a placeholder, whose ordinal is unknown.
        placeholder = RunView(id=report.result_run, thread=child_thread(snap, task) or "")
        return snap.runs.get(report.result_run, placeholder)
    text = normalized(report.summary)
    if text is None:
        return None
    same = [
        run for run in owned_runs(snap, task) if run.finished and normalized(run.summary) == text
    ]
    return same[-1] if same else None


@dataclass(frozen=True)
class Handing:
    """A text handed to the parent for a task, how, and the event that handed it."""

    text: str
    via: str  # "wake <id>" or "report <status>"
    event_id: str | None


def handed(snap: Snapshot, task: TaskView) -> list[Handing]:
    """Texts handed to the parent for T: task wakes naming T, and terminal reports of T."""
    handings = [
        Handing(wake.summary, f"wake {wake.id}", wake.queued_event)
        for wake in _wakes_to_parent(snap, task)
        if wake.source_kind == "task" and wake.source_task == task.id and wake.summary is not None
    ]
    handings += [
        Handing(report.summary, f"report {report.status}", report.event_id)
        for report in sorted(task.reports, key=lambda r: (r.at, r.event_id))
        if report.terminal and report.summary is not None
    ]
    return handings


def delivered_by_hand(snap: Snapshot, task: TaskView, *, any_text: bool = False) -> list[Handing]:
    """Deliveries of T's results by hand (manual wakes naming T), for what a person reads
    as "what the parent was given"; the rules judge by `handed` and `reaching_wake`.
    With `any_text`, also those that carried no text (an orchestrator's record that
    the result went over by other means)."""
    return [
        Handing(wake.summary or "", f"delivery by hand (wake {wake.id})", wake.queued_event)
        for wake in _wakes_to_parent(snap, task)
        if wake.source_kind == "manual"
        and wake.source_task == task.id
        and (wake.summary or any_text)
    ]


def reaching_wake(snap: Snapshot, task: TaskView, text: str | None) -> WakeView | None:
    """The first wake that brought `text` to T's parent thread, if any.

    A task wake (any task id: follow-ups count) must carry the text itself; a manual
    delivery adds a header, so its summary need only contain it.
    """
    wanted = normalized(text)
    if wanted is None:
        return None
    for wake in _wakes_to_parent(snap, task):
        carried = normalized(wake.summary)
        if carried is None:
            continue
        if wake.source_kind == "task" and carried == wanted:
            return wake
        if wake.source_kind == "manual" and wanted in carried:
            return wake
    return None


def has_reached_parent(snap: Snapshot, task: TaskView, text: str | None) -> bool:
    return reaching_wake(snap, task, text) is not None


def _wakes_to_parent(snap: Snapshot, task: TaskView) -> list[WakeView]:
    wakes = snap.wakes_by_target.get(task.parent_thread or "", [])
    return sorted(wakes, key=lambda w: (w.queued_at or LATEST, w.id))
