"""reviewer: the child asks for reviews (grandchild tasks), and their notices wake its
runs; it completes with the last one's result.

`reviews` is shared: stale_finalize's longer form (seed 000) asks for reviews too."""

from __future__ import annotations

from ...engine import Engine
from ...records import ALWAYS, FleetTask, Plan, healthy
from ...steps import complete, delegate, started_report
from ...texts import Work

# With no task left to delegate under the fleet's limit, the launcher makes it simple.
EPISODE = healthy("reviewer", weight=2, may_be_remote=True, reviewers=ALWAYS)


def flow(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, plan: Plan):
    child = task.child_thread
    final = work.final.format(ref=ref)
    yield from started_report(fleet, task)
    yield from fleet.work(child, run, fleet.span(30, 150))
    last = yield from reviews(fleet, task, run, work, ref, plan.reviewers, closing=final)
    yield from complete(fleet, task, last, final)


def reviews(fleet: Engine, task: FleetTask, run: str, work: Work, ref: str, count: int, *, closing):
    """The child asks `count` reviewers (grandchild tasks delegated from `run`), ends
    `run` waiting, and each reviewer's notice wakes a child run; the last one ends
    with `closing`. Returns that last run. The reviewers finish far enough apart that
    each wake run ends before the next notice."""
    child = task.child_thread
    env = fleet.threads[child].env
    notices: list[tuple[str, float]] = []  # (wake, when the reviewer queues it)
    gap_runs = [fleet.span(20, 120) for _ in range(count)]
    finish_at = fleet.now + fleet.span(60, 400)
    for i in range(count):
        label = "A" if i == 0 else "B"
        title = f"Review {label} of {task.title}"
        prompt = f"Review the change of {ref} ({'correctness' if i == 0 else 'API'})."
        review_task, review_run = yield from delegate(
            fleet,
            work,
            ref,
            child,
            run,
            mode="async",
            child_env=env,
            env=env,
            shape="reviewer_of",
            failure=None,
            title=title,
            prompt=prompt,
            parent_task=task.task,
        )
        wake = fleet.new_wake(child)
        span = max(10.0 * fleet.durations, finish_at - fleet.now)
        result = f"{work.review.format(ref=ref)} (reviewer {label})"
        fleet.later(
            review(fleet, review_task, review_run, span, wake, result), 0, owner=review_task
        )
        notices.append((wake, fleet.now + span + 0.2))
        # The next reviewer ends after this one's wake run has ended.
        finish_at = notices[-1][1] + 0.2 + gap_runs[i] + fleet.span(5, 60)
        yield 0.5
    fleet.finish_run(child, run, "completed", f"Asked for {count} review(s) of {ref}; waiting.")
    yield 0.2
    if task.failure is None:
        fleet.report(task, "waiting", work_state="waiting_for_children")
    last = run
    for i, (wake, notice_at) in enumerate(notices):
        yield max(0.0, notice_at + 0.05 - fleet.now)
        last = yield from fleet.woken_run(child, wake)
        yield from fleet.work(child, last, gap_runs[i])
        text = closing if i == count - 1 else f"Addressed review {i + 1} of {ref}; waiting."
        fleet.finish_run(child, last, "completed", text)
    return last


def review(fleet: Engine, task: FleetTask, run: str, span: float, wake: str, result: str):
    """A reviewer: works, reports completed, and its notice is queued for the child."""
    yield from fleet.work(task.child_thread, run, span)
    fleet.finish_run(task.child_thread, run, "completed", result)
    yield 0.1
    fleet.report(task, "completed", work_state="result_available", summary=result, result_run=run)
    yield 0.1
    fleet.queue_wake(
        wake,
        task.parent_thread,
        {"kind": "task", "task": task.task, "thread": task.child_thread},
        result,
        "completed",
    )
