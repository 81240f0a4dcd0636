"""T3's own delivery records are facts: a result the parent read (`task_status`, which
T3 records as `completionDelivery: acknowledged` with the run that observed it) reached
the parent, and a wait-mode result whose delegating run had ended went nowhere."""

from __future__ import annotations

from datetime import datetime

import pytest

from supervisor.connectors.t3code.follower import Follower
from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.detection.scenario import _result
from supervisor.core.models import Flag, IngestedEvent
from tests.support.t3.statedb import FakeT3
from tests.support.t3.timelines import day, delegate, finish, user_run

pytestmark = pytest.mark.django_db

PARENT, CHILD, TASK = "thread:lead", "thread:child", "node:delegated-task:lint"
d = day("2026-11-20")


def _task_finished(t3: FakeT3, *, completion_wake: str, parent_ends: str) -> tuple[str, str]:
    """A parent run delegates, the child's run completes and T3 finalizes; the parent's
    run ends at `parent_ends`. Returns (parent run, child run)."""
    t3.thread(PARENT, at=d("09:00:00.000"), title="Lead")
    lead = user_run(
        t3,
        PARENT,
        1,
        "msg-lead",
        text="Lint, then go on.",
        at_message=d("09:00:01.000"),
        at_run=d("09:00:01.010"),
        at_start=d("09:00:01.050"),
    )
    delegate(
        t3,
        TASK,
        at=d("09:00:02.000"),
        parent=PARENT,
        parent_run=lead,
        child=CHILD,
        title="Lint pass",
        prompt="Lint src/.",
        completionWake=completion_wake,
    )
    child = user_run(
        t3,
        CHILD,
        1,
        "msg-child",
        text="Lint src/.",
        at_message=d("09:00:02.040"),
        at_run=d("09:00:02.050"),
        at_start=d("09:00:02.100"),
    )
    t3.update_subagent(TASK, at=d("09:00:02.100"), status="running")
    if parent_ends < d("09:01:00.000"):
        finish(t3, lead, PARENT, at=parent_ends, text="Delegated; back later.")
    finish(t3, child, CHILD, at=d("09:01:00.000"), text="Lint clean: 0 findings.")
    t3.update_subagent(
        TASK,
        at=d("09:01:00.100"),
        status="completed",
        result="Lint clean: 0 findings.",
        completionDelivery={"state": "pending", "observedByRunId": None},
    )
    t3.transfer(
        "transfer:lint",
        at=d("09:01:00.200"),
        source_thread=CHILD,
        target_thread=PARENT,
        source_run=child,
        target_run=lead,
        status="consumed",
    )
    if parent_ends >= d("09:01:00.000"):
        finish(t3, lead, PARENT, at=parent_ends, text="Lint is clean; going on.")
    return lead, child


def _judged(tmp_path, write, *, start: str = "log") -> tuple[dict, object]:
    """The rows `write` writes, followed and judged at noon: (tasks' flags, the source)."""
    path = tmp_path / "state.sqlite"
    t3 = FakeT3(path)
    write(t3)
    t3.close()
    source, _ = do_create_source("t3-records", scopes="ingest,read")
    follower = Follower(source, str(path), start=start, evaluate=False)
    follower.follow()
    follower.close()
    at = datetime.fromisoformat(d("12:00:00.000"))
    with clock.virtual_clock(at):
        evaluate(source.namespace_id, at)
    return _result("records", source.namespace_id)["tasks"], source


def _open_flags(tmp_path, write) -> tuple[list[str], object]:
    tasks, source = _judged(tmp_path, write)
    return sorted(tasks[TASK]["open"]), source


def test_a_result_the_parent_read_reached_it(tmp_path):
    def write(t3):
        lead, _ = _task_finished(t3, completion_wake="always", parent_ends=d("09:00:30.000"))
        # The parent's next run (a user's message) reads it with task_status.
        reader = user_run(
            t3,
            PARENT,
            2,
            "msg-lead-2",
            text="How did the lint go?",
            at_message=d("09:02:00.000"),
            at_run=d("09:02:00.010"),
            at_start=d("09:02:00.050"),
        )
        t3.update_subagent(
            TASK,
            at=d("09:02:05.000"),
            completionDelivery={"state": "acknowledged", "observedByRunId": reader},
        )
        finish(t3, reader, PARENT, at=d("09:02:30.000"), text="Lint was clean.")

    opened, source = _open_flags(tmp_path, write)
    assert opened == []
    [delivered] = IngestedEvent.objects.filter(source=source, type="wake.delivered")
    assert delivered.data == {"wake": f"{TASK}:read", "run": "run:thread:thread:lead:ordinal:2"}


def test_the_same_result_unread_and_never_woken_is_flagged(tmp_path):
    def write(t3):
        _task_finished(t3, completion_wake="always", parent_ends=d("09:00:30.000"))

    opened, _ = _open_flags(tmp_path, write)
    assert opened == ["never_delivered"]


def test_a_wait_result_whose_delegating_run_had_ended_was_not_handed_in_the_call(tmp_path):
    def write(t3):
        # The blocking call died with its run before the child finished.
        _task_finished(t3, completion_wake="settled_only", parent_ends=d("09:00:30.000"))

    opened, source = _open_flags(tmp_path, write)
    assert not IngestedEvent.objects.filter(source=source, type="wake.delivered").exists()
    assert opened == ["never_delivered"]


def test_a_wait_result_handed_in_the_live_call_is_delivered(tmp_path):
    def write(t3):
        _task_finished(t3, completion_wake="settled_only", parent_ends=d("09:01:30.000"))

    opened, source = _open_flags(tmp_path, write)
    assert opened == []
    assert IngestedEvent.objects.filter(source=source, type="wake.delivered").count() == 1


def test_a_wait_call_that_died_and_was_delegated_again_flags_the_duplicate_and_the_lost_result(
    tmp_path,
):
    """T3 #11168: the MCP client gives up on a blocking `wait` call after ~5 minutes; the
    agent delegates the same task again. The second is a duplicate pointing at the first;
    the first's result, when it comes, goes back into a call that no longer exists."""
    second, second_child = "node:delegated-task:lint-again", "thread:child-again"

    def write(t3):
        lead, _ = _task_finished(t3, completion_wake="settled_only", parent_ends=d("09:00:30.000"))
        again = user_run(
            t3,
            PARENT,
            2,
            "msg-lead-2",
            text="The lint call timed out; delegate it again.",
            at_message=d("09:00:40.000"),
            at_run=d("09:00:40.010"),
            at_start=d("09:00:40.050"),
        )
        delegate(
            t3,
            second,
            at=d("09:00:41.000"),
            parent=PARENT,
            parent_run=again,
            child=second_child,
            title="Lint pass",
            prompt="Lint src/.",
            completionWake="settled_only",
        )
        t3.update_subagent(second, at=d("09:00:41.100"), status="running")
        child = user_run(
            t3,
            second_child,
            1,
            "msg-child-again",
            text="Lint src/.",
            at_message=d("09:00:41.040"),
            at_run=d("09:00:41.050"),
            at_start=d("09:00:41.100"),
        )
        finish(t3, child, second_child, at=d("09:01:30.000"), text="Lint clean again.")
        t3.update_subagent(
            second, at=d("09:01:30.100"), status="completed", result="Lint clean again."
        )
        t3.transfer(
            "transfer:lint-again",
            at=d("09:01:30.200"),
            source_thread=second_child,
            target_thread=PARENT,
            source_run=child,
            target_run=again,
            status="consumed",
        )
        finish(t3, again, PARENT, at=d("09:01:40.000"), text="Lint is clean.")

    tasks, _ = _judged(tmp_path, write)
    assert tasks[second]["open"] == ["duplicate_delegation"]
    flag = Flag.objects.get(task__task_id=second, kind="duplicate_delegation", state="open")
    assert flag.evidence["earlier_task"] == TASK
    # The original finished while the parent's retry run was under way; that run has
    # ended since, and nothing brought the result: the operator is told to deliver it.
    assert tasks[TASK]["open"] == ["never_delivered"]


def _wake_reserved(t3: FakeT3) -> tuple[str, str]:
    """K33's shape when a child finishes while the delegating run is still live: the task
    is `claimed`, and the wake's message is written for a run queued behind it (the
    pointer text; its command `command:fixture:delegated-completion:dispatch:…`).
    Returns (the delegating run, the queued wake run)."""
    t3.thread(PARENT, at=d("09:00:00.000"), title="Lead")
    lead = user_run(
        t3,
        PARENT,
        1,
        "msg-lead",
        text="Diff the schema in a child and poll it.",
        at_message=d("09:00:01.000"),
        at_run=d("09:00:01.010"),
        at_start=d("09:00:01.050"),
    )
    delegate(
        t3,
        TASK,
        at=d("09:00:02.000"),
        parent=PARENT,
        parent_run=lead,
        child=CHILD,
        title="Schema diff",
        prompt="Diff the schema.",
        completionWake="always",
    )
    t3.update_subagent(TASK, at=d("09:00:02.100"), status="running")
    child = user_run(
        t3,
        CHILD,
        1,
        "msg-child",
        text="Diff the schema.",
        at_message=d("09:00:02.040"),
        at_run=d("09:00:02.050"),
        at_start=d("09:00:02.100"),
    )
    finish(t3, child, CHILD, at=d("09:00:05.000"), text="Schema diff: 1 added column.")
    t3.update_subagent(
        TASK,
        at=d("09:00:05.100"),
        status="completed",
        result="Schema diff: 1 added column.",
        completionDelivery={"state": "claimed", "observedByRunId": None},
    )
    t3.transfer(
        "transfer:schema",
        at=d("09:00:05.100"),
        source_thread=CHILD,
        target_thread=PARENT,
        source_run=child,
        target_run=lead,
        status="consumed",
    )
    pointer = (
        f"Delegated task {TASK} reached a terminal state. Use task_status with taskId {TASK} "
        "to read the result."
    )
    t3.message(
        "msg-wake",
        at=d("09:00:05.200"),
        thread=PARENT,
        role="user",
        text=pointer,
        createdBy="agent",
        creationSource="server",
        delegatedCompletion={"parentRunId": lead, "generation": 1, "taskIds": [TASK]},
    )
    wake_run = t3.run(PARENT, 2, at=d("09:00:05.200"), user_message="msg-wake")
    t3.update_message("msg-wake", at=d("09:00:05.200"), runId=wake_run)
    return lead, wake_run


@pytest.mark.parametrize("start", ["log", "import"])
def test_a_wake_cancelled_because_the_parent_read_the_result_in_its_run_is_not_late(
    tmp_path, start
):
    """`kit scenario ack-in-run`: the delegating run reads the result with task_status;
    T3 acknowledges it (observed by that run) and cancels the wake run it had queued."""

    def write(t3):
        lead, wake_run = _wake_reserved(t3)
        t3.update_subagent(
            TASK,
            at=d("09:00:06.000"),
            completionDelivery={"state": "acknowledged", "observedByRunId": lead},
        )
        t3.update_run(wake_run, at=d("09:00:06.000"), status="cancelled")
        finish(t3, lead, PARENT, at=d("09:00:08.000"), text="Read it: 1 added column.")

    tasks, source = _judged(tmp_path, write, start=start)
    assert tasks[TASK]["open"] == []
    assert tasks[TASK]["raised"] == []
    delivered = {
        e.data["wake"]: e.data.get("run")
        for e in IngestedEvent.objects.filter(source=source, type="wake.delivered")
    }
    # The reserved wake and the read both reached the run that read the result.
    assert delivered == {
        "msg-wake": "run:thread:thread:lead:ordinal:1",
        f"{TASK}:read": ("run:thread:thread:lead:ordinal:1"),
    }


@pytest.mark.parametrize("start", ["log", "import"])
def test_a_result_delivered_by_hand_and_disposed_is_a_delivery_by_hand(tmp_path, start):
    """`kit scenario manual-dispose`: someone sent the parent the result by hand and
    disposed T3's delivery; T3 cancels the wake run it had queued."""

    def write(t3):
        lead, wake_run = _wake_reserved(t3)
        t3.message(
            "msg-by-hand",
            at=d("09:00:06.000"),
            thread=PARENT,
            role="user",
            text=f"[supervisor] Result of task {TASK}: Schema diff: 1 added column.",
        )
        by_hand = t3.run(PARENT, 3, at=d("09:00:06.000"), user_message="msg-by-hand")
        t3.update_message("msg-by-hand", at=d("09:00:06.000"), runId=by_hand)
        t3.update_subagent(
            TASK,
            at=d("09:00:06.500"),
            completionDelivery={"state": "disposed", "observedByRunId": None},
        )
        t3.update_run(wake_run, at=d("09:00:06.500"), status="cancelled")
        finish(t3, lead, PARENT, at=d("09:00:08.000"), text="Going on.")
        t3.update_run(by_hand, at=d("09:00:08.100"), status="running")
        finish(t3, by_hand, PARENT, at=d("09:00:09.000"), text="Noted the diff.")

    tasks, source = _judged(tmp_path, write, start=start)
    assert tasks[TASK]["open"] == []
    assert "late_wake" not in tasks[TASK]["raised"]
    [by_hand] = IngestedEvent.objects.filter(
        source=source, type="wake.queued", data__source__kind="manual"
    )
    assert by_hand.data["source"] == {"kind": "manual", "task": TASK}
    assert by_hand.data["thread"] == PARENT


def test_the_reserved_wake_neither_read_nor_disposed_stays_late(tmp_path):
    """The control: a wake run that never starts, with no record settling it."""

    def write(t3):
        lead, _ = _wake_reserved(t3)
        finish(t3, lead, PARENT, at=d("09:00:08.000"), text="Going on.")

    tasks, _ = _judged(tmp_path, write)
    # The queued wake run is unfinished: never_delivered waits on it.
    assert tasks[TASK]["open"] == ["late_wake"]
