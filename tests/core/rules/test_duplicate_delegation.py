"""duplicate_delegation: the same work delegated again while the first child went on (§5)."""

from supervisor.core.rules import duplicate_delegation as rule
from tests.support.snapshots import SETTINGS, at, run, snapshot, subjects, task

NOW = at(7200)
TITLE = "smart-loop round 1: review"
PROMPT = "Run git diff main, review the change, fix what you find."


def first(**fields):
    fields = {"title": TITLE, "prompt": PROMPT, "delegated": 0, **fields}
    return task("task:a1", child="thread:a1", **fields)


def retry(**fields):
    fields = {"title": TITLE, "prompt": PROMPT, "delegated": 600, **fields}
    return task("task:a2", child="thread:a2", **fields)


def first_runs(*extra):
    """a1's first run failed before the retry; `extra` are its later runs."""
    failed = run("a1#1", 1, thread="thread:a1", trigger=("delegation", "task:a1"), finished=250)
    return (failed, *extra)


def continued(requested=614, finished=1060):
    return run(
        "a1#2",
        2,
        thread="thread:a1",
        trigger=("message", None),
        requested=requested,
        finished=finished,
    )


def open_on(*views):
    return subjects(rule.findings(snapshot(*views), SETTINGS, NOW))


def test_opens_on_the_later_task_when_the_first_child_was_requested_again_after_it():
    # seed002: a1 failed at 09:47:17, a2 (same parent, title, prompt) was delegated at
    # 09:53:08, and a1's child was continued at 09:53:22: a2 duplicates a1's work.
    assert open_on(first(), retry(), *first_runs(continued())) == ["task:a2"]


def test_opens_when_the_first_child_was_still_running_at_the_later_delegation():
    assert open_on(first(), retry(), *first_runs(continued(requested=500))) == ["task:a2"]


def test_still_running_without_an_end_counts():
    still = run("a1#2", 2, thread="thread:a1", trigger=("message", None), requested=500)
    assert open_on(first(), retry(), *first_runs(still)) == ["task:a2"]


def test_not_open_when_the_first_child_was_idle_from_the_later_delegation_on():
    assert open_on(first(), retry(), *first_runs(continued(requested=300, finished=400))) == []


def test_run_that_ended_exactly_at_the_later_delegation_was_not_unfinished():
    assert open_on(first(), retry(), *first_runs(continued(requested=300, finished=600))) == []


def test_delegated_at_decides_which_is_later_not_arrival():
    # seed002: a1 was delegated first, so a1 itself never carries the flag.
    # The same tasks, the later one listed first: still raised on the later delegation.
    assert open_on(retry(), first(), *first_runs(continued())) == ["task:a2"]


def test_texts_compare_after_normalizing_white_space():
    spaced = retry(title=f"  {TITLE} ", prompt=PROMPT.replace(" ", "\n  "))
    assert open_on(first(), spaced, *first_runs(continued())) == ["task:a2"]


def test_another_title_is_not_a_duplicate():
    # seed003: probe a and probe b share a prompt but not a title.
    other = retry(title="smart-loop round 2: review")
    assert open_on(first(), other, *first_runs(continued())) == []


def test_another_prompt_is_not_a_duplicate():
    assert open_on(first(), retry(prompt="Something else."), *first_runs(continued())) == []


def test_another_parent_is_not_a_duplicate():
    other = retry(parent="thread:other-parent")
    assert open_on(first(), other, *first_runs(continued())) == []


def test_the_same_child_thread_is_not_a_duplicate():
    same_child = task("task:a2", child="thread:a1", title=TITLE, prompt=PROMPT, delegated=600)
    assert open_on(first(), same_child, *first_runs(continued())) == []


def test_a_follow_up_is_not_a_duplicate():
    later = retry(follow_up_of="task:a1")
    assert open_on(first(), later, *first_runs(continued())) == []


def test_a_follow_up_is_not_the_earlier_task_either():
    assert open_on(first(follow_up_of="task:x"), retry(), *first_runs(continued())) == []


def test_delegated_at_the_same_moment_neither_is_earlier():
    assert open_on(first(), retry(delegated=0), *first_runs(continued())) == []


def test_evidence_names_both_delegations():
    [finding] = rule.findings(snapshot(first(), retry(), *first_runs(continued())), SETTINGS, NOW)
    assert finding.evidence["events"] == ["task:a1/delegated", "task:a2/delegated"]
    assert finding.evidence["earlier_task"] == "task:a1"
