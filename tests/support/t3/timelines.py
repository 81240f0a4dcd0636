"""The contract scenarios' stories as T3 Code would have written them to its state
database: seed 000 (stale finalization), seed 001 (the Monitor, as
`seed001-remote-monitor` tells it), seed 002 (transient failure and retry) and a healthy
task. Ids of tasks and threads are the scenarios' own, so the follower's flags can be
compared with each scenario's `expect_open`; times are the scenarios' too.

Each story mixes in what a real file holds besides: version 1 rows, sequence gaps, an
imported thread with an old date, a turn item, an event type nobody knows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support.t3.statedb import FakeT3

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


@dataclass(frozen=True)
class Timeline:
    name: str
    scenario: Path
    write: Callable[[FakeT3], None]


def day(date: str) -> Callable[[str], str]:
    return lambda time: f"{date}T{time}Z"


def delegate(t3, task, *, at, parent, parent_run, child, title, prompt, **more):
    """delegate_task: the subagent row, then the child thread T3 makes for it."""
    t3.subagent(
        task, at=at, thread=parent, run=parent_run, child=child, title=title, prompt=prompt, **more
    )
    t3.thread(child, at=at, title=title, parent=parent, relationship="subagent")


def user_run(t3, thread, ordinal, message, *, text, at_message, at_run, at_start, **more):
    """A user message (a prompt, a typed message) and the run it starts."""
    t3.message(message, at=at_message, thread=thread, role="user", text=text, **more)
    run = t3.run(thread, ordinal, at=at_run, user_message=message)
    t3.update_message(message, at=at_run, runId=run)
    t3.update_run(run, at=at_start, status="running")
    return run


def notice_run(t3, thread, ordinal, message, *, notification, at_notice, at_run, at_start):
    """A notice queued for a thread, and the run it starts there."""
    t3.message(message, at=at_notice, thread=thread, role="user", notification=notification)
    run = t3.run(thread, ordinal, at=at_run, user_message=message)
    t3.update_message(message, at=at_run, runId=run)
    t3.update_run(run, at=at_start, status="running")
    return run


def finish(t3, run, thread, *, at, text, status="completed", message=None):
    """The run's last assistant message, then the turn ending: waiting, then final."""
    message = message or f"msg-{run}-final"
    t3.message(
        message, at=at, thread=thread, role="assistant", text=text[:10], run=run, streaming=True
    )
    t3.update_message(message, at=at, text=text, streaming=False)
    if status == "completed":
        t3.update_run(run, at=at, status="waiting")
    t3.update_run(run, at=at, status=status, completedAt=at)


def task_notice(task, child, title, outcome, text):
    return {
        "source": {"kind": "delegated_task", "taskIds": [task], "childThreadId": child},
        "outcome": outcome,
        "summary": f'Delegated task "{title}" finished',
        "detail": text,
    }


# --- seed 000: finalized on run 1's interim text in the gap before the wake run -----


def seed000(t3: FakeT3) -> None:
    d = day("2026-11-05")
    parent = "thread:parent-release"
    child = "thread:delegated-task:retry-port"
    review_a, review_b = "thread:delegated-task:review-a", "thread:delegated-task:review-b"
    task = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
    task_a, task_b = "node:delegated-task:review-a", "node:delegated-task:review-b"
    title = "Port the retry loop"
    prompt = "Port the retry loop to the new client, run the suite, get two reviews, open a PR."
    stale = "Still running, waiting on the checks."

    t3.thread(parent, at=d("22:39:50.000"), title="Release 4.2 coordinator")
    t3.legacy_v1(at=d("22:39:51.000"))
    # Imported from an older version: its dates are older than every row around it.
    t3.thread("thread:imported-2025", at="2025-03-01T10:00:00.000Z", title="Notes from 2025")
    p1 = user_run(
        t3,
        parent,
        1,
        "msg-release-1",
        text="Port the retry loop and ship 4.2.",
        at_message=d("22:39:55.000"),
        at_run=d("22:39:55.010"),
        at_start=d("22:39:55.050"),
    )
    delegate(
        t3,
        task,
        at=d("22:40:00.000"),
        parent=parent,
        parent_run=p1,
        child=child,
        title=title,
        prompt=prompt,
        completionWake="always",
    )
    c1 = user_run(
        t3,
        child,
        1,
        "msg-retry-port-prompt",
        text=prompt,
        at_message=d("22:40:00.040"),
        at_run=d("22:40:00.050"),
        at_start=d("22:40:00.100"),
    )
    t3.update_subagent(task, at=d("22:40:00.100"), status="running")
    finish(t3, p1, parent, at=d("22:40:05.000"), text="Delegated the port; waiting for it.")
    t3.gap()
    t3.roster(
        child,
        [{"taskId": "bsuite01", "description": "pytest -q tests/ (long)", "kind": "command"}],
        at=d("22:41:10.000"),
        run=c1,
        status="active",
    )
    t3.ignored_event(at=d("22:41:12.000"), thread=child, run=c1)
    for sub, thread, at, sub_title, sub_prompt in (
        (task_a, review_a, "22:41:20", "Review A", "Review the retry loop port for correctness."),
        (
            task_b,
            review_b,
            "22:41:21",
            "Review B",
            "Review the retry loop port for API compatibility.",
        ),
    ):
        delegate(
            t3,
            sub,
            at=d(f"{at}.000"),
            parent=child,
            parent_run=c1,
            child=thread,
            title=sub_title,
            prompt=sub_prompt,
            completionWake="always",
        )
        user_run(
            t3,
            thread,
            1,
            f"msg-{thread}-prompt",
            text=sub_prompt,
            at_message=d(f"{at}.040"),
            at_run=d(f"{at}.050"),
            at_start=d(f"{at}.100"),
        )
        t3.update_subagent(sub, at=d(f"{at}.100"), status="running")
    finish(t3, c1, child, at=d("22:42:00.000"), text=stale)
    t3.update_subagent(task, at=d("22:42:00.200"), status="waiting")
    t3.unknown_event(at=d("22:45:00.000"), thread=child)
    t3.legacy_v1(at=d("22:46:00.000"))
    t3.gap(3)

    # The command exits; the task finalizes on run 1's text before the wake run exists.
    t3.roster(child, [], at=d("22:50:35.100"))
    t3.update_subagent(
        task,
        at=d("22:50:35.143"),
        status="completed",
        result=stale,
        completionDelivery={"state": "pending"},
    )
    t3.transfer(
        "ctx:retry-port:1",
        at=d("22:50:35.143"),
        source_thread=child,
        target_thread=parent,
        source_run=c1,
    )
    p2 = notice_run(
        t3,
        parent,
        2,
        "msg-release-notice-1",
        notification=task_notice(task, child, title, "completed", stale),
        at_notice=d("22:50:35.150"),
        at_run=d("22:50:35.251"),
        at_start=d("22:50:35.300"),
    )
    c2 = notice_run(
        t3,
        child,
        2,
        "msg-retry-port-notice-1",
        notification={
            "source": {"kind": "background_command"},
            "outcome": "completed",
            "summary": 'Command "pytest -q tests/ (long)" finished',
        },
        at_notice=d("22:50:35.300"),
        at_run=d("22:50:35.330"),
        at_start=d("22:50:35.380"),
    )
    finish(t3, p2, parent, at=d("22:50:50.000"), text="The port is done; moving on.")
    finish(
        t3,
        c2,
        child,
        at=d("22:52:10.100"),
        text="Suite passed (412 tests). Waiting on reviewers A and B.",
    )

    # Each reviewer's notice wakes the child again: runs 3 and 4, never delivered.
    for sub, thread, at, ordinal, review_text, after in (
        (
            task_a,
            review_a,
            "22:55:00",
            3,
            "Review A: two nits in backoff jitter; otherwise correct.",
            ("22:56:00.100", "Fixed review A's nits. Waiting on reviewer B."),
        ),
        (
            task_b,
            review_b,
            "23:01:00",
            4,
            "Review B: API compatible; no changes needed.",
            (
                "23:03:30.100",
                "All checks green, both reviews addressed. PR #812 is ready to merge.",
            ),
        ),
    ):
        finish(t3, f"run:thread:{thread}:ordinal:1", thread, at=d(f"{at}.100"), text=review_text)
        t3.update_subagent(sub, at=d(f"{at}.200"), status="completed", result=review_text)
        t3.transfer(
            f"ctx:{thread}:1",
            at=d(f"{at}.200"),
            source_thread=thread,
            target_thread=child,
            source_run=f"run:thread:{thread}:ordinal:1",
        )
        run = notice_run(
            t3,
            child,
            ordinal,
            f"msg-retry-port-notice-{ordinal}",
            notification=task_notice(sub, thread, sub.rsplit(":", 1)[1], "completed", review_text),
            at_notice=d(f"{at}.300"),
            at_run=d(f"{at}.400"),
            at_start=d(f"{at}.450"),
        )
        finish(t3, run, child, at=d(after[0]), text=after[1])


# --- seed 001: the Monitor's wake run answers, the parent never hears of it ---------


def seed001(t3: FakeT3) -> None:
    d = day("2026-11-07")
    parent, child = "thread:origin-lead", "thread:remote-child"
    task = "node:delegated-task:cmd%3Aremote-probe"
    title = "Throwaway probe"
    prompt = (
        "Run sleep 25; echo OK in the background, end your turn with WAITING, "
        "reply FINAL when woken."
    )
    t3.thread(parent, at=d("15:07:50.000"), title="Origin lead")
    lead1 = user_run(
        t3,
        parent,
        1,
        "msg-lead-1",
        text="Probe the remote box.",
        at_message=d("15:07:55.000"),
        at_run=d("15:07:55.010"),
        at_start=d("15:07:55.050"),
    )
    delegate(
        t3,
        task,
        at=d("15:08:00.000"),
        parent=parent,
        parent_run=lead1,
        child=child,
        title=title,
        prompt=prompt,
    )
    t3.legacy_v1(at=d("15:08:00.300"))
    run1 = user_run(
        t3,
        child,
        1,
        "msg-remote-prompt",
        text=prompt,
        at_message=d("15:08:00.900"),
        at_run=d("15:08:01.000"),
        at_start=d("15:08:01.050"),
    )
    finish(t3, lead1, parent, at=d("15:08:05.000"), text="Waiting for the probe.")
    t3.roster(
        child,
        [{"taskId": "mon-7f3a", "description": "sleep 25; echo OK", "kind": "monitor"}],
        at=d("15:08:15.200"),
        run=run1,
        status="active",
    )
    finish(t3, run1, child, at=d("15:08:16.800"), text="WAITING")
    t3.gap(2)
    t3.update_subagent(task, at=d("15:08:25.700"), status="running")
    t3.roster(child, [], at=d("15:08:40.900"))
    run2 = notice_run(
        t3,
        child,
        2,
        "msg-remote-monitor",
        notification={
            "source": {"kind": "monitor"},
            "outcome": "completed",
            "summary": 'Monitor "sleep 25; echo OK" finished',
        },
        at_notice=d("15:08:40.950"),
        at_run=d("15:08:41.000"),
        at_start=d("15:08:41.050"),
    )
    finish(t3, run2, child, at=d("15:08:43.200"), text="FINAL")
    # Written after run 2's end, dated before it: occurred_at is not in sequence order.
    t3.update_subagent(task, at=d("15:08:42.800"), status="completed", result="WAITING")
    t3.transfer(
        "ctx:remote-probe:1",
        at=d("15:08:42.800"),
        source_thread=child,
        target_thread=parent,
        source_run=run1,
    )
    t3.unknown_event(at=d("15:08:42.820"), thread=parent, event_type="thread.pinned")
    notice_run(
        t3,
        parent,
        2,
        "msg-lead-notice-1",
        notification=task_notice(task, child, title, "completed", "WAITING"),
        at_notice=d("15:08:42.850"),
        at_run=d("15:08:43.000"),
        at_start=d("15:08:43.050"),
    )


# --- seed 002: a transient failure reported failed; the retry duplicates the work --


def seed002(t3: FakeT3) -> None:
    d = day("2026-11-13")
    parent = "thread:smart-loop"
    a1, a2 = "thread:delegated-task:a1", "thread:delegated-task:a2"
    task1, task2 = "node:delegated-task:cmd%3Aa1", "node:delegated-task:cmd%3Aa2"
    title = "smart-loop round 1: codemode await/all_settled review"
    prompt = "Run git diff main, review the codemode await/all_settled change, fix what you find."
    error = "Failed to authenticate. API Error: 403 Attention Required! | Cloudflare"
    fixed = (
        "Reviewed and fixed the codemode change: 3 files changed (await.ts, all_settled.ts, "
        "index.ts); tests pass."
    )
    done = "Done. Another writer finished it while I was reading; files were already changed."

    t3.thread(parent, at=d("09:42:00.000"), title="smart loop")
    p1 = user_run(
        t3,
        parent,
        1,
        "msg-loop-1",
        text="Run the smart loop.",
        at_message=d("09:42:10.000"),
        at_run=d("09:42:10.010"),
        at_start=d("09:42:10.050"),
    )
    # mode "wait", a legacy record: no completionWake says so.
    delegate(
        t3,
        task1,
        at=d("09:43:00.000"),
        parent=parent,
        parent_run=p1,
        child=a1,
        title=title,
        prompt=prompt,
    )
    r1 = user_run(
        t3,
        a1,
        1,
        "msg-a1-prompt",
        text=prompt,
        at_message=d("09:43:00.040"),
        at_run=d("09:43:00.050"),
        at_start=d("09:43:00.100"),
    )
    t3.update_subagent(task1, at=d("09:43:00.100"), status="running")
    t3.legacy_v1(at=d("09:44:00.000"))
    finish(t3, r1, a1, at=d("09:47:17.000"), text=error, status="failed")
    t3.update_subagent(task1, at=d("09:47:17.100"), status="failed", result=error)
    # The wait call returns the failure into the run that made it.
    t3.transfer(
        "ctx:a1:1",
        at=d("09:47:17.100"),
        source_thread=a1,
        target_thread=parent,
        source_run=r1,
        target_run=p1,
    )
    finish(t3, p1, parent, at=d("09:48:00.000"), text="The review failed with a 403.")
    t3.gap(11)

    p2 = user_run(
        t3,
        parent,
        2,
        "msg-loop-continue",
        text="continue",
        at_message=d("09:52:55.000"),
        at_run=d("09:52:55.100"),
        at_start=d("09:52:55.150"),
    )
    delegate(
        t3,
        task2,
        at=d("09:53:08.000"),
        parent=parent,
        parent_run=p2,
        child=a2,
        title=title,
        prompt=prompt,
    )
    r2 = user_run(
        t3,
        a2,
        1,
        "msg-a2-prompt",
        text=prompt,
        at_message=d("09:53:08.040"),
        at_run=d("09:53:08.050"),
        at_start=d("09:53:08.100"),
    )
    t3.update_subagent(task2, at=d("09:53:08.100"), status="running")
    # The user continues the first child by hand: a message run, not the task's.
    a1r2 = user_run(
        t3,
        a1,
        2,
        "msg-a1-continue",
        text="continue",
        creationSource="web",
        at_message=d("09:53:21.990"),
        at_run=d("09:53:22.000"),
        at_start=d("09:53:22.050"),
    )
    finish(t3, a1r2, a1, at=d("10:00:43.000"), text=fixed)
    # Its completion reaches the parent under another node id, queued behind the turn.
    t3.message(
        "msg-loop-notice-other",
        at=d("10:00:43.200"),
        thread=parent,
        role="user",
        notification={
            "source": {
                "kind": "delegated_task",
                "taskIds": ["node:delegated-task:other-id"],
                "childThreadId": a1,
            },
            "outcome": "completed",
            "summary": f'Delegated task "{title}" finished',
            "detail": fixed,
        },
    )
    finish(t3, r2, a2, at=d("10:07:45.000"), text=done)
    t3.update_subagent(task2, at=d("10:07:45.100"), status="completed", result=done)
    t3.transfer(
        "ctx:a2:1",
        at=d("10:07:45.100"),
        source_thread=a2,
        target_thread=parent,
        source_run=r2,
        target_run=p2,
    )
    t3.unknown_event(at=d("10:20:00.000"), thread=parent)
    finish(t3, p2, parent, at=d("10:51:07.900"), text="Both reviews are in.")
    p3 = t3.run(parent, 3, at=d("10:51:08.000"), user_message="msg-loop-notice-other")
    t3.update_message("msg-loop-notice-other", at=d("10:51:08.000"), runId=p3)
    t3.update_run(p3, at=d("10:51:08.050"), status="running")


# --- healthy: the task stays open through CI and completes with the wake run's text --


def healthy(t3: FakeT3) -> None:
    d = day("2026-11-10")
    parent, child, task = "thread:lead", "thread:ci-watch", "task:ci-watch"
    title, prompt = "Open PR and watch CI", "Open a PR for the fix and report when CI is green."
    t3.thread(parent, at=d("07:59:50.000"), title="Lead")
    lead1 = user_run(
        t3,
        parent,
        1,
        "msg-lead-1",
        text="Fix it and get CI green.",
        at_message=d("07:59:55.000"),
        at_run=d("07:59:55.010"),
        at_start=d("07:59:55.050"),
    )
    delegate(
        t3,
        task,
        at=d("08:00:00.000"),
        parent=parent,
        parent_run=lead1,
        child=child,
        title=title,
        prompt=prompt,
        completionWake="always",
    )
    run1 = user_run(
        t3,
        child,
        1,
        "msg-ci-prompt",
        text=prompt,
        at_message=d("08:00:00.040"),
        at_run=d("08:00:00.050"),
        at_start=d("08:00:00.100"),
    )
    t3.update_subagent(task, at=d("08:00:00.100"), status="running")
    # A native subagent of run 1, whose notice is steered into run 1 itself.
    t3.subagent(
        "node:native:reader-1",
        at=d("08:00:10.000"),
        thread=child,
        run=run1,
        origin="provider_native",
        title="Read the failing test",
        status="running",
    )
    t3.update_subagent(
        "node:native:reader-1",
        at=d("08:00:50.000"),
        status="completed",
        result="The test expects UTC.",
    )
    t3.message(
        "msg-ci-native-notice",
        at=d("08:00:50.100"),
        thread=child,
        role="user",
        run=run1,
        notification={
            "source": {"kind": "background_task", "work": "subagent"},
            "outcome": "completed",
            "summary": 'Agent "Read the failing test" finished',
        },
    )
    t3.ignored_event(at=d("08:00:55.000"), thread=child, run=run1)
    t3.roster(
        child,
        [{"taskId": "bci0001", "description": "gh pr checks --watch", "kind": "command"}],
        at=d("08:01:00.000"),
        run=run1,
        status="active",
    )
    finish(t3, run1, child, at=d("08:01:02.000"), text="PR opened; waiting on CI.")
    t3.update_subagent(task, at=d("08:01:02.200"), status="waiting")
    t3.legacy_v1(at=d("08:05:00.000"))
    t3.gap(5)
    t3.roster(child, [], at=d("08:15:00.000"))
    run2 = notice_run(
        t3,
        child,
        2,
        "msg-ci-notice",
        notification={
            "source": {"kind": "background_command"},
            "outcome": "completed",
            "summary": 'Command "gh pr checks --watch" finished',
        },
        at_notice=d("08:15:00.050"),
        at_run=d("08:15:00.100"),
        at_start=d("08:15:00.150"),
    )
    finish(t3, run2, child, at=d("08:15:25.000"), text="CI green, PR #77 ready to merge.")
    t3.update_subagent(
        task, at=d("08:15:25.300"), status="completed", result="CI green, PR #77 ready to merge."
    )
    t3.transfer(
        "ctx:ci-watch:1",
        at=d("08:15:25.300"),
        source_thread=child,
        target_thread=parent,
        source_run=run2,
    )
    t3.unknown_event(at=d("08:15:25.350"), thread=parent)
    # The parent's turn is still under way: the notice is steered into it.
    t3.message(
        "msg-lead-notice",
        at=d("08:15:25.400"),
        thread=parent,
        role="user",
        run=lead1,
        notification=task_notice(
            task, child, title, "completed", "CI green, PR #77 ready to merge."
        ),
    )
    finish(t3, lead1, parent, at=d("08:16:00.000"), text="CI is green; merging.")


class Renamed:
    """A FakeT3 that writes a story under other ids: `prefix` before every thread, task,
    message and transfer id (run ids follow their thread's), so a story can be told
    many times in one file."""

    IDS = ("thread:", "node:", "msg-", "ctx:", "task:")

    def __init__(self, t3: FakeT3, prefix: str):
        self.t3, self.prefix = t3, prefix

    def __getattr__(self, name):
        attribute = getattr(self.t3, name)
        if not callable(attribute):
            return attribute

        def call(*args, **kwargs):
            args = [self.rename(a) for a in args]
            kwargs = {k: v if k == "at" else self.rename(v) for k, v in kwargs.items()}
            return attribute(*args, **kwargs)

        return call

    def rename(self, value):
        run, prefix = "run:thread:", self.prefix
        if isinstance(value, str):
            if value.startswith(run) and not value.startswith(run + prefix):
                return run + prefix + value[len(run) :]
            return prefix + value if value.startswith(self.IDS) else value
        if isinstance(value, dict):
            return {k: self.rename(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.rename(v) for v in value]
        return value


def renamed(t3: FakeT3, prefix: str) -> FakeT3:
    return Renamed(t3, prefix)  # type: ignore[return-value]


TIMELINES = {
    "seed000": Timeline("seed000", SCENARIOS / "seed000-stale-finalize.json", seed000),
    "seed001": Timeline("seed001", SCENARIOS / "seed001-remote-monitor.json", seed001),
    "seed002": Timeline("seed002", SCENARIOS / "seed002-transient-failure.json", seed002),
    "healthy": Timeline("healthy", SCENARIOS / "healthy-awaited-background.json", healthy),
}
