"""The flag rules of contract §5, one module per kind.

Each module has `KIND` and `findings(snap, settings, now) -> list[Finding]`: the subjects
on which its kind is open now (raise condition holds, resolve condition does not). A
time-based module also has `due_times(snap, settings, now)`: for each subject, the
earliest later time at which its findings there could change with no new event.

`judge` runs each rule on its own: a rule that raises is reported with its error, and
the others' findings stand, so one broken rule cannot freeze the other kinds' flags.

Imports the facts (the snapshot, ownership, the reading) and the contract's times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from supervisor.core.facts.snapshot import DetectionSettings, Finding, Snapshot

from . import (
    account_limit,
    cancel_not_propagated,
    completed_on_failure,
    delegation_never_started,
    delegation_rejected,
    dispatch_lag,
    duplicate_delegation,
    failed_while_running,
    late_wake,
    left_by_restart,
    misrouted_wake,
    never_delivered,
    orphan_wake,
    premature_completion,
    silent_background_item,
    stale_result,
    stuck,
    transient_failure,
    undelivered_result,
)

RULES = (
    premature_completion,
    stale_result,
    undelivered_result,
    never_delivered,
    failed_while_running,
    transient_failure,
    duplicate_delegation,
    orphan_wake,
    late_wake,
    stuck,
    left_by_restart,
    dispatch_lag,
    delegation_rejected,
    delegation_never_started,
    completed_on_failure,
    account_limit,
    misrouted_wake,
    cancel_not_propagated,
    silent_background_item,
)


@dataclass
class Judgement:
    """What the rules found on a snapshot: findings, due times, and the kinds whose
    rule raised (kind -> its error), which found nothing here."""

    findings: list[Finding] = field(default_factory=list)
    due: dict = field(default_factory=dict)
    failed: dict[str, Exception] = field(default_factory=dict)


def judge(snap: Snapshot, settings: DetectionSettings, now: datetime) -> Judgement:
    """Every kind's findings and due times, each rule isolated from the others."""
    judgement = Judgement()
    for rule in RULES:
        try:
            found = rule.findings(snap, settings, now)
            due = rule.due_times(snap, settings, now) if hasattr(rule, "due_times") else {}
        except Exception as exc:
            judgement.failed[rule.KIND] = exc
            continue
        judgement.findings += found
        for subject, when in due.items():
            if subject not in judgement.due or when < judgement.due[subject]:
                judgement.due[subject] = when
    return judgement


def run_rules(snap: Snapshot, settings: DetectionSettings, now: datetime) -> list[Finding]:
    """Every kind's findings: the flags that should be open now."""
    return [finding for rule in RULES for finding in rule.findings(snap, settings, now)]


def due_times(snap: Snapshot, settings: DetectionSettings, now: datetime) -> dict:
    """(subject type, id) -> when that subject's findings could next change with no new
    event: the time a beat sweep must look at it again."""
    due: dict = {}
    for rule in RULES:
        if hasattr(rule, "due_times"):
            for subject, when in rule.due_times(snap, settings, now).items():
                if subject not in due or when < due[subject]:
                    due[subject] = when
    return due
