"""The rule registry: every kind runs, and time-based kinds say when they next change."""

from supervisor.core.rules import RULES, due_times, run_rules
from tests.support.snapshots import (
    SETTINGS,
    TASK,
    at,
    report,
    run,
    snapshot,
    task,
    unknown_task,
    wake,
)

KINDS = {
    "premature_completion",
    "stale_result",
    "undelivered_result",
    "never_delivered",
    "left_by_restart",
    "failed_while_running",
    "transient_failure",
    "duplicate_delegation",
    "orphan_wake",
    "late_wake",
    "stuck",
    "dispatch_lag",
    "delegation_rejected",
    "delegation_never_started",
    "completed_on_failure",
    "account_limit",
    "misrouted_wake",
    "cancel_not_propagated",
    "silent_background_item",
}


def test_every_kind_has_one_rule_module():
    assert sorted(rule.KIND for rule in RULES) == sorted(KINDS)


def test_run_rules_gathers_the_findings_of_every_kind():
    snap = snapshot(
        task(requested=0, delegated=10, reports=[report("failed", 20, summary="503")]),
        run("r1", 1, requested=10, finished=15),
        run("r2", 2, trigger=("message", None), requested=30),
    )
    kinds = {f.kind for f in run_rules(snap, SETTINGS, at(60))}
    assert kinds == {"dispatch_lag", "transient_failure", "failed_while_running"}


def test_tasks_never_delegated_are_never_subjects():
    snap = snapshot(
        unknown_task("task:ghost", report("failed", 20, summary="503 overloaded")),
        run("r1", 1, trigger=("delegation", "task:ghost")),
    )
    assert run_rules(snap, SETTINGS, at(7200)) == []


def test_next_change_is_the_earliest_over_the_kinds():
    # late_wake at 100 + 600 s, stuck at 0 + 1800 s.
    snap = snapshot(task(), run("r1", 1), wake("w", source=("task", TASK), queued=100))
    assert min(due_times(snap, SETTINGS, at(200)).values()) == at(700)


def test_no_next_change_when_only_an_event_can_change_the_findings():
    snap = snapshot(task(reports=[report("completed", 20)]), run("r1", 1, finished=15))
    assert due_times(snap, SETTINGS, at(200)) == {}
