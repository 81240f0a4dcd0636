"""What became of a terminal task's result: T3's delivery record, and the task's wakes
until that record settles them.
"""

from __future__ import annotations

from .fields import parse_time, string
from .memory import KEEP_TASK_WAKES, Task, bound
from .state import MapState
from .statuses import TERMINAL, WAKE_OUTCOMES

# T3's delivery records of a terminal task (`completionDelivery.state`), and those that
# settle how (or that) the result reached the parent.
DELIVERY_STATES = frozenset({"pending", "claimed", "delivered", "acknowledged", "disposed"})
SETTLED = frozenset({"delivered", "acknowledged", "disposed"})


def delivery(state: MapState, task_id: str, p: dict, known: Task, occurred: str | None) -> None:
    """T3's own record of how a terminal result reached the parent (P006, K33, Z32;
    J has none), in the contract's words:

    - `acknowledged`: the parent read it (`task_status`, or a `wait` returning it)
      in the run T3 names: a task wake carrying the result, delivered to that run;
    - `disposed`: handed over by other means (a delivery by hand), and no wake will
      come: a delivery by hand of T;
    - `delivered`: the wake reached the run it started or joined.

    A wake T3 had reserved for the task and then cancelled (the read or the dispose
    made it moot) was delivered by that read or that hand, not late. `pending` and
    `claimed` say nothing yet."""
    completion = p.get("completionDelivery")
    if not isinstance(completion, dict):
        return
    record = completion.get("state")
    if record not in DELIVERY_STATES:
        state.unknown_value(f"completionDelivery.state:{record}")
        return
    if known["status"] not in TERMINAL or record not in SETTLED or known.get("settled"):
        return
    at = state.at(p.get("updatedAt"), occurred)
    if at is None:
        return
    observed = string(completion.get("observedByRunId")) or None
    if record == "acknowledged" and not known.get("read"):
        known["read"] = 1
        wake = f"{task_id}:read"
        state.emit(
            "wake.queued",
            (wake,),
            at,
            {
                "wake": wake,
                "thread": known["parent"],
                "source": {"kind": "task", "task": task_id, "thread": known["child"]},
                "summary": known["result"],
                "outcome": known["status"] if known["status"] in WAKE_OUTCOMES else None,
            },
        )
        state.emit("wake.delivered", (wake,), at, {"wake": wake, "run": observed})
    elif record == "disposed":
        wake = f"{task_id}:disposed"
        state.emit(
            "wake.queued",
            (wake,),
            at,
            {
                "wake": wake,
                "thread": known["parent"],
                "source": {"kind": "manual", "task": task_id},
            },
        )
    known["settled"] = [record, at, observed]
    for wake, entry in (known.get("wakes") or {}).items():
        settle(state, wake, entry, known["settled"])


def settle(
    state: MapState, wake: str, entry: list, settled: list, queued: str | None = None
) -> None:
    """A task wake whose delivery T3 has settled: delivered to the run that read the
    result, to the run the wake started or joined, or (disposed) to none. A wake
    its run delivered already keeps that delivery: the id is the same, the first
    telling wins."""
    record, at, observed = settled
    if queued is not None and parse_time(queued) > parse_time(at):
        at = queued  # never delivered before it was queued
    run = {"acknowledged": observed, "delivered": entry[1]}.get(record)
    state.emit("wake.delivered", (wake,), at, {"wake": wake, "run": run})


def task_wake(
    state: MapState, task: Task, wake: str, message_id: str, run: str | None, at: str
) -> None:
    """Remember a task's wake until T3 settles its delivery; one already settled is
    delivered now, unless (an import) the run it started tells it."""
    entry = [message_id, run]
    wakes = task.setdefault("wakes", {})
    wakes[wake] = entry
    bound(wakes, KEEP_TASK_WAKES)
    settled = task.get("settled")
    if settled and not (state.importing and message_id in state.began_by):
        settle(state, wake, entry, settled, queued=at)
