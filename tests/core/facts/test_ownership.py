"""Contract §4: which child runs a task owns, and what became of their results."""

from supervisor.core.facts.ownership import (
    child_thread,
    child_thread_task,
    delegated_tasks,
    handed,
    has_reached_parent,
    item_run_id,
    known_tasks,
    latest_result,
    latest_result_run,
    normalized,
    open_delegated_tasks,
    owned_runs,
    owning,
    reaching_wake,
    result_run,
    unfinished_owned_items,
)
from tests.support.snapshots import (
    CHILD,
    PARENT,
    TASK,
    item,
    report,
    run,
    snapshot,
    task,
    unknown_task,
    wake,
)


def owned_ids(snap, task_id=TASK):
    return [r.id for r in owned_runs(snap, snap.tasks[task_id])]


# Texts


def test_normalized_trims_and_collapses_white_space():
    assert normalized("  PR #812\n\tready   to merge ") == "PR #812 ready to merge"


def test_normalized_keeps_none():
    assert normalized(None) is None


# Known tasks and child threads


def test_known_tasks_leave_out_tasks_never_delegated():
    snap = snapshot(task(), unknown_task("task:other"))
    assert [t.id for t in known_tasks(snap)] == [TASK]


def test_child_thread_falls_back_to_the_thread_of_the_first_run():
    snap = snapshot(task(child=None), run("r1", 1, thread="thread:later-named"))
    assert child_thread(snap, snap.tasks[TASK]) == "thread:later-named"


def test_child_thread_task_prefers_the_task_that_is_not_a_follow_up():
    snap = snapshot(
        task("task:follow", delegated=0, follow_up_of=TASK),
        task(TASK, delegated=10),
    )
    assert child_thread_task(snap, CHILD).id == TASK


def test_child_thread_task_among_follow_ups_takes_the_earliest_delegated():
    snap = snapshot(
        task("task:b", delegated=20, follow_up_of="task:x"),
        task("task:a", delegated=10, follow_up_of="task:x"),
    )
    assert child_thread_task(snap, CHILD).id == "task:a"


# Ownership


def test_first_run_is_owned():
    snap = snapshot(task(), run("r1", 1))
    assert owned_ids(snap) == ["r1"]


def test_first_run_of_another_task_is_not_owned():
    snap = snapshot(task(), run("r1", 1, trigger=("delegation", "task:other")))
    assert owned_ids(snap) == []


def test_run_of_another_thread_is_not_owned():
    snap = snapshot(task(), run("r1", 1, thread="thread:elsewhere"))
    assert owned_ids(snap) == []


def test_run_woken_by_an_item_of_an_owned_run_is_owned():
    snap = snapshot(task(), run("r1", 1), item("bg"), run("r2", 2, trigger=("background", "bg")))
    assert owned_ids(snap) == ["r1", "r2"]


def test_run_woken_by_an_item_not_awaited_is_not_owned():
    snap = snapshot(
        task(), run("r1", 1), item("bg", awaited=False), run("r2", 2, trigger=("background", "bg"))
    )
    assert owned_ids(snap) == ["r1"]


def test_run_woken_by_an_item_of_a_follow_up_run_is_not_owned():
    snap = snapshot(
        task(),
        run("r1", 1, finished=10),
        run("r2", 2, trigger=("message", None), requested=20),
        item("bg", run="r2", started=30),
        run("r3", 3, trigger=("background", "bg"), requested=40),
    )
    assert owned_ids(snap) == ["r1"]


def test_item_without_a_run_belongs_to_the_latest_run_requested_by_its_start():
    snap = snapshot(
        task(),
        run("r1", 1, finished=5),
        run("r2", 2, trigger=("message", None), requested=20),
        item("bg", run=None, started=10),
    )
    assert item_run_id(snap, snap.items["bg"]) == "r1"


def test_monitor_wake_run_is_owned():
    # seed001: the Monitor (awaited not said) ends; its wake's run is owned like any other.
    snap = snapshot(
        task(),
        run("r1", 1, finished=16),
        item("mon", started=15, finished=40),
        wake("w", to=CHILD, source=("background", "mon"), outcome="completed", queued=40),
        run("r2", 2, trigger=("wake", "w"), requested=41),
    )
    assert owned_ids(snap) == ["r1", "r2"]


def test_run_woken_by_a_progress_notice_is_not_owned():
    snap = snapshot(
        task(),
        run("r1", 1),
        item("bg"),
        wake("w", to=CHILD, source=("background", "bg"), outcome="updated", queued=40),
        run("r2", 2, trigger=("wake", "w"), requested=41),
    )
    assert owned_ids(snap) == ["r1"]


def test_run_woken_by_a_grandchild_delegated_from_an_owned_run_is_owned():
    snap = snapshot(
        task(),
        run("r1", 1),
        task("task:review", parent=CHILD, child="thread:review", parent_run="r1", delegated=5),
        wake("w", to=CHILD, source=("task", "task:review"), source_thread="thread:review"),
        run("r2", 2, trigger=("wake", "w"), requested=60),
    )
    assert owned_ids(snap) == ["r1", "r2"]


def test_run_woken_by_a_grandchild_of_a_follow_up_run_is_not_owned():
    snap = snapshot(
        task(),
        run("r1", 1, finished=3),
        run("r2", 2, trigger=("message", None), requested=4),
        task("task:review", parent=CHILD, child="thread:review", parent_run="r2", delegated=5),
        wake("w", to=CHILD, source=("task", "task:review"), source_thread="thread:review"),
        run("r3", 3, trigger=("wake", "w"), requested=60),
    )
    assert owned_ids(snap) == ["r1"]


def test_grandchild_without_parent_run_comes_from_the_latest_run_requested_by_its_delegation():
    snap = snapshot(
        task(),
        run("r1", 1, finished=3),
        run("r2", 2, trigger=("message", None), requested=10),
        task("task:review", parent=CHILD, child="thread:review", delegated=5),
        wake("w", to=CHILD, source=("task", "task:review"), source_thread="thread:review"),
        run("r3", 3, trigger=("wake", "w"), requested=60),
    )
    assert owned_ids(snap) == ["r1", "r3"]


def test_run_woken_by_a_continue_by_hand_of_the_task_is_owned():
    # Contract 1.1, §4 rule 5: a manual wake of T to T's child thread (a continue sent
    # by hand), whatever the connector's message looks like.
    snap = snapshot(
        task(),
        run("r1", 1, finished=10, status="failed"),
        wake("w", to=CHILD, source=("manual", TASK), summary="Go on, please.", queued=20),
        run("r2", 2, trigger=("wake", "w"), requested=21),
        run("r3", 3, trigger=("restart", "r2"), requested=30),
    )
    assert owned_ids(snap) == ["r1", "r2", "r3"]
    assert owning(snap, snap.tasks[TASK], snap.runs["r2"]).owned


def test_run_woken_by_a_manual_wake_of_another_task_is_not_owned():
    snap = snapshot(
        task(),
        run("r1", 1, finished=10),
        wake("w", to=CHILD, source=("manual", "task:other"), queued=20),
        run("r2", 2, trigger=("wake", "w"), requested=21),
    )
    assert owned_ids(snap) == ["r1"]


def test_run_woken_by_a_manual_wake_of_the_task_to_another_thread_is_not_owned():
    # A delivery by hand goes to the parent: rule 5 asks for a wake to T's child thread.
    snap = snapshot(
        task(),
        run("r1", 1, finished=10),
        wake("w", to=PARENT, source=("manual", TASK), queued=20),
        run("r2", 2, trigger=("wake", "w"), requested=21),
    )
    assert owned_ids(snap) == ["r1"]


def test_restart_of_an_owned_run_is_owned():
    snap = snapshot(task(), run("r1", 1), run("r2", 2, trigger=("restart", "r1")))
    assert owned_ids(snap) == ["r1", "r2"]


def test_restart_of_a_follow_up_run_is_not_owned():
    snap = snapshot(
        task(),
        run("r1", 1),
        run("r2", 2, trigger=("message", None)),
        run("r3", 3, trigger=("restart", "r2")),
    )
    assert owned_ids(snap) == ["r1"]


def test_message_and_scheduled_runs_are_not_owned():
    snap = snapshot(
        task(),
        run("r1", 1),
        run("r2", 2, trigger=("message", None)),
        run("r3", 3, trigger=("scheduled", None)),
    )
    assert owned_ids(snap) == ["r1"]


def test_ownership_reaches_a_fixed_point_through_chained_links():
    # r4 is owned only through r3, which is owned only through r2: the clauses chain.
    snap = snapshot(
        task(),
        run("r4", 4, trigger=("background", "bg2"), requested=40),
        run("r3", 3, trigger=("restart", "r2"), requested=30),
        item("bg2", run="r3", started=31),
        run("r2", 2, trigger=("background", "bg1"), requested=20),
        item("bg1", run="r1", started=1),
        run("r1", 1),
    )
    assert owned_ids(snap) == ["r1", "r2", "r3", "r4"]


def reasons(snap, task_id=TASK):
    view = snap.tasks[task_id]
    return {r.id: owning(snap, view, r).words for r in snap.runs.values()}


def test_ownership_answers_with_its_reason_for_every_run():
    # The reason comes with the answer: what the page shows beside each run.
    snap = snapshot(
        task(),
        run("r1", 1),
        item("bg", awaited=False),
        run("r2", 2, trigger=("background", "bg")),
        item("mon", run="r1", started=15),
        wake("w", to=CHILD, source=("background", "mon"), outcome="updated", queued=40),
        run("r3", 3, trigger=("wake", "w"), requested=41),
        run("r4", 4, trigger=("restart", "r1"), requested=50),
        run("r5", 5, trigger=("message", None), requested=60),
        run("r6", 6, trigger=(None, None), requested=70),
    )
    assert reasons(snap) == {
        "r1": "owned: first run",
        "r2": "not owned: woken by item bg (started with awaited: false)",
        "r3": "not owned: woken by wake w (item mon finished), a progress notice",
        "r4": "owned: restart of r1",
        "r5": "not owned: message-started follow-up",
        "r6": "not owned: trigger not known yet",
    }
    view = snap.tasks[TASK]
    owned = {r.id for r in snap.runs.values() if owning(snap, view, r).owned}
    assert owned == set(owned_ids(snap))


def test_a_follow_up_owns_no_run_and_says_so():
    snap = snapshot(task(follow_up_of="task:first"), run("r1", 1))
    assert reasons(snap) == {"r1": "not owned: this task follows up task:first and owns no runs"}


def test_follow_up_task_owns_no_runs():
    snap = snapshot(task(follow_up_of="task:first"), run("r1", 1))
    assert owned_ids(snap) == []


def test_item_not_awaited_is_not_owed():
    snap = snapshot(task(), run("r1", 1), item("bg", awaited=False), item("ci", awaited=True))
    assert [i.id for i in unfinished_owned_items(snap, snap.tasks[TASK])] == ["ci"]


def test_delegated_tasks_are_those_from_owned_runs():
    snap = snapshot(
        task(),
        run("r1", 1),
        run("r2", 2, trigger=("message", None)),
        task("task:a", parent=CHILD, child="thread:a", parent_run="r1"),
        task("task:b", parent=CHILD, child="thread:b", parent_run="r2"),
    )
    assert [t.id for t in delegated_tasks(snap, snap.tasks[TASK])] == ["task:a"]


def test_open_delegated_tasks_leave_out_terminal_ones():
    snap = snapshot(
        task(),
        run("r1", 1),
        task("task:a", parent=CHILD, child="thread:a", parent_run="r1"),
        task(
            "task:b",
            parent=CHILD,
            child="thread:b",
            parent_run="r1",
            reports=[report("completed", 9)],
        ),
    )
    assert [t.id for t in open_delegated_tasks(snap, snap.tasks[TASK])] == ["task:a"]


# Latest result and result run


def test_latest_result_is_the_summary_of_the_highest_owned_finished_run():
    snap = snapshot(
        task(),
        run("r1", 1, finished=10, summary="interim"),
        item("bg"),
        run("r2", 2, trigger=("background", "bg"), requested=20, finished=30, summary="final"),
        run("r3", 3, trigger=("background", "bg"), requested=40),
    )
    assert latest_result(snap, snap.tasks[TASK]) == "final"


def test_latest_result_ignores_follow_up_runs():
    snap = snapshot(
        task(),
        run("r1", 1, finished=10, summary="ours"),
        run("r2", 2, trigger=("message", None), requested=20, finished=30, summary="theirs"),
    )
    assert latest_result(snap, snap.tasks[TASK]) == "ours"


def test_no_latest_result_before_an_owned_run_finishes():
    snap = snapshot(task(), run("r1", 1))
    assert latest_result_run(snap, snap.tasks[TASK]) is None


def test_an_empty_summary_is_no_result():
    # Contract 1.1: T's latest result skips an owned finished run whose summary is empty
    # once trimmed (a run cut by a restart ends with "", say).
    snap = snapshot(
        task(),
        run("r1", 1, finished=10, summary="PR #812 ready"),
        run("r2", 2, trigger=("restart", "r1"), requested=20, finished=30, summary=" \n\t"),
    )
    assert latest_result_run(snap, snap.tasks[TASK]).id == "r1"
    assert latest_result(snap, snap.tasks[TASK]) == "PR #812 ready"


def test_no_latest_result_while_every_owned_summary_is_empty():
    snap = snapshot(task(), run("r1", 1, finished=10, summary=""))
    assert latest_result_run(snap, snap.tasks[TASK]) is None


def test_result_run_is_the_one_the_current_report_names():
    snap = snapshot(
        task(reports=[report("completed", 50, summary="final", result_run="r1")]),
        run("r1", 1, finished=10, summary="interim"),
    )
    assert result_run(snap, snap.tasks[TASK]).id == "r1"


def test_result_run_named_but_not_described_has_no_ordinal():
    snap = snapshot(task(reports=[report("completed", 50, result_run="r9")]))
    assert result_run(snap, snap.tasks[TASK]).ordinal is None


def test_result_run_without_a_name_is_the_highest_owned_run_with_the_reported_text():
    snap = snapshot(
        task(reports=[report("completed", 50, summary=" same  text")]),
        run("r1", 1, finished=10, summary="same text"),
        run("r2", 2, trigger=("restart", "r1"), requested=11, finished=20, summary="same text"),
        run("r3", 3, trigger=("restart", "r2"), requested=21, finished=30, summary="other"),
    )
    assert result_run(snap, snap.tasks[TASK]).id == "r2"


def test_no_result_run_when_no_owned_run_has_the_reported_text():
    snap = snapshot(
        task(reports=[report("completed", 50, summary="elsewhere")]),
        run("r1", 1, finished=10, summary="ours"),
    )
    assert result_run(snap, snap.tasks[TASK]) is None


# Handed to the parent and reached the parent


def test_handed_texts_are_task_wakes_naming_the_task_and_terminal_reports():
    snap = snapshot(
        task(
            reports=[
                report("running", 5, summary="progress"),
                report("completed", 10, summary="done"),
            ]
        ),
        wake("w1", summary="wake text"),
        wake("w2", source=("task", "task:other"), summary="other task's text"),
        wake("w3", to="thread:elsewhere", summary="not to the parent"),
    )
    assert [h.text for h in handed(snap, snap.tasks[TASK])] == ["wake text", "done"]


def test_text_reached_the_parent_by_a_task_wake_under_another_task_id():
    # seed002: a1's child's completion came back naming another node id.
    snap = snapshot(task(), wake("w", source=("task", "task:other"), summary="the  result "))
    assert has_reached_parent(snap, snap.tasks[TASK], "the result")


def test_task_wake_must_carry_the_text_itself():
    snap = snapshot(task(), wake("w", summary="Header\n\nthe result"))
    assert not has_reached_parent(snap, snap.tasks[TASK], "the result")


def test_manual_delivery_reaches_the_parent_when_it_contains_the_text():
    snap = snapshot(
        task(), wake("w", source=("manual", TASK), summary="Delivered by supervisor:\nthe result")
    )
    assert reaching_wake(snap, snap.tasks[TASK], "the  result").id == "w"


def test_manual_delivery_without_the_text_does_not_reach_the_parent():
    snap = snapshot(task(), wake("w", source=("manual", TASK), summary="something else"))
    assert not has_reached_parent(snap, snap.tasks[TASK], "the result")


def test_wake_to_another_thread_does_not_reach_the_parent():
    snap = snapshot(task(), wake("w", to="thread:elsewhere", summary="the result"))
    assert not has_reached_parent(snap, snap.tasks[TASK], "the result")


def test_background_wake_to_the_parent_does_not_reach_it():
    snap = snapshot(task(), wake("w", source=("background", "bg"), summary="the result", to=PARENT))
    assert not has_reached_parent(snap, snap.tasks[TASK], "the result")
