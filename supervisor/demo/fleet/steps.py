"""The steps of a task's life that episodes share: its delegation (the parent's ask, the
task, its child thread and first run), its reports, and its result handed to the parent
by a wake. Each is a coroutine (or emits at once) on an `Engine`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .engine import Engine
from .records import ORIGIN_ENV, Episode, FleetTask, Plan, stamp
from .texts import PROVIDERS, Work


def delegate(
    fleet: Engine,
    work: Work,
    ref: str,
    parent: str,
    parent_run: str | None,
    *,
    mode: str,
    child_env: str,
    shape: str,
    failure: Episode | None,
    env: str = ORIGIN_ENV,
    requested_lag: float | None = None,
    title: str | None = None,
    prompt: str | None = None,
    parent_task: str | None = None,
):
    """`task.delegated`, the child thread seen, its first run requested and started;
    returns the task and that run. `failure` (None: healthy) says what it must flag."""
    number = next(fleet.task_numbers)
    slug = f"{number:04d}-{work.slug}"
    task_id = f"node:delegated-task:command%3Amcp%3A{fleet.tag}%3Adelegate-task%3A{slug}"
    child = f"thread:delegated-task:{fleet.tag}-{slug}"
    fleet.thread_state(child, child_env)
    expects = failure or Episode(shape)  # a healthy task expects nothing
    task = FleetTask(
        task=task_id,
        title=title or work.title.format(ref=ref),
        prompt=prompt or work.prompt.format(ref=ref),
        parent_thread=parent,
        child_thread=child,
        mode=mode,
        env=env,
        child_env=child_env,
        shape=shape,
        failure=expects.failure,
        expected_flags=sorted(expects.opens),
        passing_flags=sorted(expects.passing),
        delegated_at=stamp(fleet.at(fleet.now, env)),
        parent_task=parent_task,
    )
    fleet.tasks.append(task)
    fleet.by_task[task_id] = task
    fleet.thread_flags[child] = sorted(expects.child_thread_opens)
    requested_at = None
    if requested_lag is not None:
        requested_at = stamp(fleet.at(fleet.now - requested_lag, env))
    request_id = f"{fleet.tag}-req-{number}"
    # The parent's ask first (issue 31), then the delegation that answers it.
    fleet.request_task(parent, parent_run, request_id, task.title, env)
    fleet.emit(
        "task.delegated",
        env,
        task=task_id,
        parent_thread=parent,
        child_thread=child,
        title=task.title,
        mode=mode,
        prompt=task.prompt,
        client_request_id=request_id,
        parent_run=parent_run,
        target_env=child_env if child_env != env else None,
        requested_at=requested_at,
    )
    provider, model = fleet.rng.choice(PROVIDERS)
    fleet.emit(
        "thread.seen",
        child_env,
        thread=child,
        title=task.title,
        parent_thread=parent,
        provider=provider,
        model=model,
    )
    yield 0.05
    run = fleet.request_run(child, {"kind": "delegation", "task": task_id})
    yield 0.05
    fleet.start_run(child, run)
    return task, run


def delegated(
    fleet: Engine,
    plan: Plan,
    work: Work,
    ref: str,
    prun: str,
    flow: Callable,
    failure: Episode | None,
    *,
    busy: bool = False,
):
    """The plain episode after the parent's turn: one delegation as `plan` says, the
    parent run awaiting its result or ending (or kept `busy`: late_wake), and the task's
    life `flow(fleet, task, run, work, ref, plan)`, which a cancel stops."""
    task, run = yield from delegate(
        fleet,
        work,
        ref,
        plan.parent,
        prun,
        mode=plan.mode,
        child_env=plan.remote or ORIGIN_ENV,
        shape=plan.shape,
        failure=failure,
        requested_lag=healthy_lag(fleet) if plan.mode == "wait" else None,
    )
    if busy:
        fleet.busy[task.task] = prun
    else:
        await_or_end(fleet, task, plan.parent, prun)
    fleet.later(flow(fleet, task, run, work, ref, plan), 0, owner=task)


def healthy_lag(fleet: Engine) -> float:
    """A wait call dispatched at once: well inside `dispatch_lag`."""
    return min(fleet.uniform(0.01, 0.4), fleet.settings.dispatch_lag / 4)


def await_or_end(fleet: Engine, task: FleetTask, parent: str, prun: str, waits: int = 1) -> None:
    """A wait-mode parent run stays until the results join it; otherwise it ends soon."""
    if task.mode == "wait":
        task.wait_run = prun
        fleet.parent_waits[prun] = fleet.parent_waits.get(prun, 0) + waits
    else:
        fleet.later(fleet.end_parent_run(parent, prun, f"Delegated {task.title!r}."), 0)


def started_report(fleet: Engine, task: FleetTask):
    yield 0.4
    fleet.report(task, "running", work_state="working")


def complete(fleet: Engine, task: FleetTask, run: str, summary: str, *, named_task=None):
    """Reported completed with `summary`, which is handed to the parent."""
    yield 0.2
    fleet.report(task, "completed", work_state="result_available", summary=summary, result_run=run)
    yield 0.1
    yield from hand_to_parent(fleet, task, summary, "completed", named_task=named_task)


def fail(fleet: Engine, task: FleetTask, run: str, text: str, error: str, **more: Any):
    """The child's run fails with `text`; the task is reported failed with it, and the
    failure is handed to the parent as the result."""
    fleet.finish_run(task.child_thread, run, "failed", text, error, **more)
    yield 0.1
    fleet.report(
        task,
        "failed",
        work_state="result_available",
        summary=text,
        result_run=run,
        error=error,
        **more,
    )
    yield 0.1
    yield from hand_to_parent(fleet, task, text, "failed")


def hand_to_parent(
    fleet: Engine, task: FleetTask, summary: str, outcome: str, *, named_task: str | None = None
):
    """The orchestrator hands a result to the parent: a task wake, delivered at once
    into the run waiting on it (mode wait) or a new parent run it starts."""
    parent = task.parent_thread
    wake = fleet.new_wake(parent)
    source = {"kind": "task", "task": named_task or task.task, "thread": task.child_thread}
    fleet.queue_wake(wake, parent, source, summary, outcome)
    yield from deliver_to_parent(fleet, task, wake)


def deliver_to_parent(fleet: Engine, task: FleetTask, wake: str):
    parent = task.parent_thread
    waiting = task.wait_run
    if waiting and waiting in fleet.threads[parent].active:
        yield 0.1
        fleet.emit("wake.delivered", fleet.threads[parent].env, wake=wake, run=waiting)
        fleet.parent_waits[waiting] -= 1
        if fleet.parent_waits[waiting] <= 0:
            fleet.later(fleet.end_parent_run(parent, waiting, "Read the results; next."), 0)
        return
    run = yield from fleet.woken_run(parent, wake)
    fleet.later(fleet.end_parent_run(parent, run, f"Noted the result of {task.title!r}."), 0)
