"""Workers killed with SIGKILL mid-evaluation and mid-action, on the fault stack: a new
worker with beat finishes the work; each flag opens once, each delivery lands once."""

from __future__ import annotations

import pytest

from tests.support.faults.actions import (
    SECRET,
    SEED000,
    TASK,
    action_row,
    post_events,
    request_delivery,
)
from tests.support.faults.services import wait_for
from tests.support.receiver import Receiver


def scenario_expected(scenario: dict) -> set[tuple[str, str, str]]:
    """The open flags a scenario expects, as (subject type, id, kind)."""
    found = set()
    for group, subject_type in (("tasks", "task"), ("threads", "thread")):
        for subject, kinds in scenario["expect_open"].get(group, {}).items():
            found |= {(subject_type, subject, kind) for kind in kinds}
    return found


def test_worker_killed_inside_the_evaluation_transaction(stack, figures, tmp_path):
    token = stack.create_source("orchestrator")
    stack.start_web()
    paused = tmp_path / "paused"
    worker = stack.start_worker(
        "--include",
        "tests.support.faults.evaluation_pause",
        env={"SUPERVISOR_TEST_PAUSE_FILE": str(paused)},
    )
    answer = post_events(stack, token, SEED000["events"])
    wait_for(paused.exists, what="the worker to hold inside its evaluation")
    # Its transaction is open: the namespace row locked, its flags written, not committed.
    held = stack.sql(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND state = 'idle in transaction'"
    )[0][0]
    stack.kill(worker)
    flags_after_kill = len(stack.sql("SELECT id FROM core_flag"))
    backlog_after_kill = stack.backlog()
    stack.start_worker()
    stack.start_beat()
    expected = scenario_expected(SEED000)
    wait_for(
        lambda: stack.open_flags() == expected and stack.backlog() == 0,
        timeout=60,
        what="the sweep to open the scenario's flags",
    )
    rows = stack.flag_rows()
    figures.update(
        events_sent=len(SEED000["events"]),
        accepted=answer["accepted"],
        stored=stack.stored_events("orchestrator")[1],
        transactions_open_while_paused=held,
        flags_after_kill=flags_after_kill,
        backlog_after_kill=backlog_after_kill,
        flags_expected=len(expected),
        flags_open=len(stack.open_flags()),
        flag_rows={kind: n for (subject, kind), n in rows.items() if subject == TASK},
    )
    assert answer["accepted"] == len(SEED000["events"])
    assert held >= 1, "the worker was not inside its transaction"
    assert flags_after_kill == 0, "the killed evaluation's uncommitted flags are visible"
    assert backlog_after_kill > 0
    assert {kind: n for (subject, kind), n in rows.items() if subject == TASK} == {
        kind: 1 for (_, _, kind) in expected
    }
    assert stack.stored_events("orchestrator") == (len(SEED000["events"]),) * 2


def manual_wakes(stack) -> int:
    return stack.sql(
        "SELECT count(*) FROM core_wake WHERE source_kind = 'manual' AND source_task = %s", TASK
    )[0][0]


@pytest.mark.parametrize("point", ["after_the_receiver_accepted", "after_claiming"])
def test_worker_killed_mid_action(stack, figures, tmp_path, point):
    with Receiver(secret=SECRET) as receiver:
        token = stack.create_source(
            "orchestrator",
            connector="webhook",
            settings={"url": receiver.url, "secret": SECRET, "timeout": 20},
        )
        stack.start_web()
        stack.start_worker()
        post_events(stack, token, SEED000["events"])
        paused = tmp_path / "paused"
        if point == "after_claiming":
            # The evaluation runs first on a plain worker; this one stops after claiming.
            wait_for(lambda: stack.backlog() == 0, what="the seed to be evaluated")
            stack.kill(stack.procs["worker-1"])
            worker = stack.start_worker(
                "--include",
                "tests.support.action_pause",
                env={"SUPERVISOR_TEST_PAUSE_FILE": str(paused)},
            )
        else:
            worker = stack.procs["worker-1"]
            receiver.hold()
        action_id = request_delivery(stack, token)
        if point == "after_claiming":
            wait_for(paused.exists, what="the worker to claim the action")
        else:
            assert receiver.accepted.wait(30), "the delivery never reached the receiver"
        stack.kill(worker)
        receiver.release()
        killed = action_row(stack, action_id)
        deliveries_at_kill = len(receiver.deliveries)
        stack.start_worker(name="sweeper")
        stack.start_beat()
        wait_for(
            lambda: action_row(stack, action_id)["state"] == "succeeded",
            timeout=60,
            what="the swept action to succeed",
        )
        done = action_row(stack, action_id)
        actions = stack.sql("SELECT count(*) FROM core_action")[0][0]
        figures.update(
            point=point,
            state_at_kill=killed["state"],
            deliveries_at_kill=deliveries_at_kill,
            actions_requested=1,
            action_rows=actions,
            actions_done=int(done["state"] == "succeeded"),
            attempts=done["attempts"],
            receiver_attempts=receiver.attempts,
            deliveries=len(receiver.deliveries),
            doubled=len(receiver.deliveries) - 1,
            manual_wakes=manual_wakes(stack),
        )
        assert killed["state"] == "sending"
        assert deliveries_at_kill == (1 if point == "after_the_receiver_accepted" else 0)
        assert actions == 1 and done["attempts"] == 2
        assert done["response"]["duplicate"] is (point == "after_the_receiver_accepted")
        assert len(receiver.deliveries) == 1
        assert receiver.attempts == (2 if point == "after_the_receiver_accepted" else 1)
        assert manual_wakes(stack) == 1
