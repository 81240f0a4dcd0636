"""An `app_owned` subagent is a task: first sight `task.delegated`, each status change
`task.reported` (its `result` is the summary once it is final). What became of its
result once final (T3's delivery record) is deliveries.py's.
"""

from __future__ import annotations

from supervisor.core.contract.events import TaskDelegated

from . import deliveries
from .fields import string
from .ids import digest, request_key
from .memory import KEEP_TASKS, Failure, Task, bound
from .state import MapState
from .statuses import TASK_STATUS, TERMINAL

# The contract requires `mode`, T3 does not store it: until the contract lets it be left
# out, a task whose mode no stored field tells is sent as "async".
MODE_REQUIRED = TaskDelegated.model_fields["mode"].is_required()


def task(state: MapState, p: dict, occurred: str | None, *, restart: bool = False) -> None:
    """An `app_owned` subagent's row: told as delegated once (again when its child thread
    or its call becomes known), reported at each change of its status."""
    tasks = state.memory.tasks
    task_id, parent = p["id"], p["threadId"]
    child = string(p.get("childThreadId")) or None
    known = tasks.get(task_id)
    if known is None:
        at = state.at(p.get("startedAt"), p.get("updatedAt"), occurred)
        if at is None:
            return
        bound(tasks, KEEP_TASKS - 1)
        known = tasks[task_id] = {
            "parent": parent,
            "run": string(p.get("runId")) or None,
            "child": None,
            "at": at,
            "status": None,
            "result": None,
            "result_run": None,
            "waits": wait_mode(p),
        }
    if child and known["child"] != child:
        # A child thread's first run is its first task's (later ones are follow-ups).
        state.memory.children.setdefault(child, task_id)
        state.task_moved(task_id, known["child"], child)
        known["child"] = child
    if "request" not in known:
        known["request"] = request_of(state, task_id, p, known)
        if known["request"] not in state.memory.requests:
            # No call seen: one told later may still name it (its output), so what
            # the delegation said is kept to tell it again, while the task is open.
            known["said"] = [string(p.get("title")), string(p.get("prompt"))]
    if (
        "told" not in known
        or known["told"] != known["child"]
        or known.get("told_request") != known["request"]
    ):
        known["told"], known["told_request"] = known["child"], known["request"]
        delegated(state, task_id, p, known)
    status = p.get("status")
    mapped = TASK_STATUS.get(status)
    if mapped is None:
        state.unknown_value(f"subagent.status:{status}")
        return
    delivery = p.get("completionDelivery")
    record = delivery.get("state") if isinstance(delivery, dict) else None
    known["record"] = record if record in deliveries.DELIVERY_STATES else None
    result = p.get("result") if isinstance(p.get("result"), str) else None
    if mapped in TERMINAL and result is not None:
        known["result"] = result
    if mapped == known["status"]:
        deliveries.delivery(state, task_id, p, known, occurred)
        return
    final = mapped in TERMINAL
    if final:
        known.pop("said", None)
    at = state.at(p.get("completedAt") if final else None, p.get("updatedAt"), occurred)
    if at is None:
        return
    known["status"] = mapped
    # Cancelled by a restart's recovery or a stop's (K33): nobody cancelled it.
    known["cut"] = 1 if restart and mapped == "cancelled" else None
    report(state, task_id, known, mapped, at, key=(task_id, mapped, at))
    deliveries.delivery(state, task_id, p, known, occurred)


def delegated(state: MapState, task_id: str, p: dict, known: Task) -> None:
    mode = known["waits"]
    data = {
        "task": task_id,
        "parent_thread": known["parent"],
        "child_thread": known["child"],
        "title": string(p.get("title")),
        "prompt": p.get("prompt") if isinstance(p.get("prompt"), str) else None,
        "parent_run": known["run"],
        "mode": None if mode is None else ("wait" if mode else "async"),
        "client_request_id": known.get("request"),
    }
    if data["mode"] is None and MODE_REQUIRED:
        data["mode"] = "async"
    # Told again, with the same `at`, once the child thread is known: the id with
    # the child extends the one without, so it sorts after it and wins the tie
    # (contract §4) without moving the delegation's time. So is a call that names
    # the task only after it was told.
    child = known["child"]
    suffix = ":child:" + digest(child) if child else ""
    if known.get("late_request"):
        suffix += ":request:" + digest(known["request"])
    state.emit("task.delegated", (task_id,), known["at"], data, suffix=suffix)


def report(
    state: MapState, task_id: str, known: Task, status: str, at: str, *, key, told_as=None
) -> None:
    final = status in TERMINAL
    error, failure_class = failure_of(state, known) if status == "failed" else (None, None)
    state.emit(
        "task.reported",
        key,
        at,
        {
            "task": task_id,
            "status": status,
            "summary": known["result"] if final else None,
            "result_run": known["result_run"] if final else None,
            # T3 hands a result only by a wake, a read or the wait call's return; a
            # task its recovery cancelled it hands nothing, and says so (cause).
            "delivery": "wake" if final and not known.get("cut") else None,
            "cause": "restart" if final and known.get("cut") else None,
            "error": error,
            "failure_class": failure_class,
            # T3's own delivery record and its cohort's count then: evidence.
            "delivery_record": known.get("record") if final else None,
            "settled_deliveries": state.memory.cohorts.get(known["run"]) if final else None,
        },
        told_as=told_as,
    )


def failure_of(state: MapState, known: Task) -> tuple[str | None, str | None]:
    """T3's failure message and class for the task's result: its result run's error,
    else (the result run not told yet) the child's last failed run's. Memory kept
    before classes were read holds `[thread, error]`: no class then."""
    failures = state.memory.failures
    if known["result_run"]:
        failure = failures.get(known["result_run"])
        return (failure[1], class_of(failure)) if failure else (None, None)
    for failure in reversed(failures.values()):
        if failure[0] == known["child"]:
            return failure[1], class_of(failure)
    return None, None


def request_of(state: MapState, task_id: str, p: dict, known: Task) -> str | None:
    """The `client_request_id` of the call that made this task, if any is known."""
    requests = state.memory.requests
    key = request_key(task_id)
    if key is not None and key in requests:
        requests[key]["task"] = task_id
        return key
    for other, request in requests.items():
        if request["task"] == task_id:
            return other
    title = string(p.get("title")) or None
    for other, request in requests.items():
        if (
            request["task"] is None
            and not request.get("refused")
            and request["thread"] == known["parent"]
            and request["run"] == known["run"]
            and request["title"] == title
        ):
            request["task"] = task_id
            return other
    # No call seen (a build that writes none, or a command sent by a client): the
    # agent's key T3 made the task id from, when it was made by the agents' tool.
    return key


def wait_mode(p: dict) -> bool | None:
    """Whether the task's result goes back in the delegating call, when a field says so:
    a `mode`, or the parent-wake policy (`settled_only` is wait-mode delegation's)."""
    mode = p.get("mode")
    if mode in ("wait", "async"):
        return mode == "wait"
    wake = p.get("completionWake")
    if wake in ("always", "settled_only"):
        return wake == "settled_only"
    return None


def class_of(failure: Failure) -> str | None:
    return failure[2] if len(failure) > 2 else None
