"""Shared by the wake rules (orphan_wake, late_wake): each wake has a deadline and a
subject; a kind is open on a subject once any of its wakes' deadlines has passed."""

from __future__ import annotations

from datetime import datetime

from supervisor.core.facts.snapshot import WakeView

Deadline = tuple[datetime, tuple[str, str], WakeView]


def passed_by_subject(deadlines: list[Deadline], now: datetime) -> dict:
    """(subject type, id) -> the wakes whose deadline has passed, for each subject."""
    by_subject: dict[tuple[str, str], list[WakeView]] = {}
    for when, subject, wake in deadlines:
        if when <= now:
            by_subject.setdefault(subject, []).append(wake)
    return dict(sorted(by_subject.items()))


def earliest_by_subject(deadlines: list[Deadline], now: datetime) -> dict:
    """(subject type, id) -> the earliest deadline still to come there."""
    due: dict = {}
    for when, subject, _ in deadlines:
        if when > now and (subject not in due or when < due[subject]):
            due[subject] = when
    return due
