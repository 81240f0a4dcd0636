"""Seed 000's hand audit, measured on the stored history.

The seed's author audited 4,846 delegated tasks by hand: how many closed within 3 s of
a new child run being requested ("finalized in the gap before a wake run"), how many of
those handed the parent an earlier run's interim text, and how long later results took
to reach the parent. `audit` measures the same on every stored namespace (or some),
with the contract's own words (§4): known task, owned run, result run, handed, reached,
read from ownership (`core.facts.ownership`) and the task's reading (`core.facts.reading`,
by the contract's words), as the flags read them: no code of its own decides them.

Definitions, per known task T (contract §4 for the words in quotes):

- gap finalization: T's first terminal report (by `at`, ties by event id) came at most
  3 s before the `requested_at` of an "owned" run with a higher ordinal than T's
  "result run" (`reading.result_run_by_contract`, i.e. from T's current report), and not
  after it: 0 <= requested_at - report.at <= 3 s. The first such run (lowest ordinal) is
  the "gap run". When T's current report carries no run of known ordinal (its text is
  no owned run's and it names none, or names one not described yet), any owned run
  requested in that window counts: a run requested after the report is not the one it
  carried (T3's fallback text for a run that ended without one is such a report).
- handed an earlier run's text: a gap finalization where a text "handed" to the parent
  for T (`reading.handed_by_contract`) is, as the contract compares texts, the summary of
  an owned finished run with an ordinal lower than the gap run's.
- undelivered_result open: T has a stored Flag of that kind, state open.
- never_delivered open (a starved delivery): T has a stored Flag of that kind, state
  open: a terminal result that nothing will bring to the parent (a completion wake
  capped away, T3 #12285; a `wait` call that died).
- later result delay: for each owned finished run of T with an ordinal higher than T's
  result run, whose summary "reached" the parent (`reading.reaching_wake_by_contract`): the
  seconds from that run's `finished_at` to the `queued_at` of the first wake carrying
  it. Reported as count, median (the middle value, or the mean of the two middle ones)
  and p90 by nearest rank (the ceil(0.9 n)-th smallest value, no interpolation). Clocks
  of different environments differ, and a later run may repeat a text that reached the
  parent before it ended, so a delay may come out negative; it is kept as is.
- open flags by kind: for every kind of the flag-kind catalogue, the stored flags of
  that kind in state open, on any subject (task, thread or source).

Shares are of tasks seen (known tasks) across the namespaces audited.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Count

from supervisor.core.facts import reading
from supervisor.core.facts.loader import load_namespace
from supervisor.core.facts.ownership import known_tasks, owned_runs
from supervisor.core.facts.snapshot import RunView, Snapshot, TaskView
from supervisor.core.flags.kinds import CATALOGUE
from supervisor.core.models import Flag, Namespace

GAP = timedelta(seconds=3)
P90 = 0.9
HEADER = ("measure", "value", "share of tasks seen")


@dataclass(frozen=True, order=True)
class TaskRef:
    """A task across namespaces: orchestrator ids are unique only within one."""

    namespace: str
    task: str

    def as_json(self) -> dict:
        return {"namespace": self.namespace, "task": self.task}


@dataclass
class AuditReport:
    namespaces: list[str] = field(default_factory=list)
    tasks_seen: int = 0
    gap_finalizations: list[TaskRef] = field(default_factory=list)
    handed_earlier_text: list[TaskRef] = field(default_factory=list)
    undelivered_result_open: list[TaskRef] = field(default_factory=list)
    never_delivered_open: list[TaskRef] = field(default_factory=list)
    # Seconds from a later result's run end to the first wake carrying it to the parent.
    later_result_delays: list[float] = field(default_factory=list)
    # Every kind of the catalogue, in its order, with its open flags (on any subject).
    open_by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def delay_median(self) -> float | None:
        return statistics.median(self.later_result_delays) if self.later_result_delays else None

    @property
    def delay_p90(self) -> float | None:
        """Nearest rank: the ceil(0.9 n)-th smallest delay."""
        if not self.later_result_delays:
            return None
        ordered = sorted(self.later_result_delays)
        return ordered[max(math.ceil(P90 * len(ordered)), 1) - 1]

    def share(self, count: int) -> float | None:
        return count / self.tasks_seen if self.tasks_seen else None

    def as_rows(self) -> list[tuple[str, str, str]]:
        """Rows of (measure, value, share of tasks seen), as text; HEADER names the columns."""

        def counted(label: str, tasks: list[TaskRef]) -> tuple[str, str, str]:
            share = self.share(len(tasks))
            return label, str(len(tasks)), "-" if share is None else f"{share:.1%}"

        def seconds(value: float | None) -> str:
            return "-" if value is None else f"{value:.1f}"

        return [
            ("tasks seen", str(self.tasks_seen), ""),
            counted("finalized in the gap before a later run (<= 3 s)", self.gap_finalizations),
            counted("  handed an earlier run's text", self.handed_earlier_text),
            counted("undelivered_result open", self.undelivered_result_open),
            counted("never_delivered open (a starved delivery)", self.never_delivered_open),
            ("later results that reached the parent", str(len(self.later_result_delays)), ""),
            ("  delay, median (s)", seconds(self.delay_median), ""),
            ("  delay, p90 nearest rank (s)", seconds(self.delay_p90), ""),
        ]

    def as_json(self) -> dict:
        def counted(tasks: list[TaskRef]) -> dict:
            share = self.share(len(tasks))
            return {
                "count": len(tasks),
                "share_of_tasks_seen": None if share is None else round(share, 4),
                "tasks": [ref.as_json() for ref in tasks],
            }

        return {
            "namespaces": self.namespaces,
            "tasks_seen": self.tasks_seen,
            "gap_finalizations": counted(self.gap_finalizations),
            "handed_earlier_text": counted(self.handed_earlier_text),
            "undelivered_result_open": counted(self.undelivered_result_open),
            "never_delivered_open": counted(self.never_delivered_open),
            "later_result_delays": {
                "count": len(self.later_result_delays),
                "median_s": self.delay_median,
                "p90_s": self.delay_p90,
            },
            "open_flags_by_kind": self.open_by_kind,
        }


def audit(namespace_ids: list[int] | None = None) -> AuditReport:
    """The audit over the given namespaces (all when None), one snapshot at a time."""
    namespaces = Namespace.objects.order_by("pk")
    if namespace_ids is not None:
        namespaces = namespaces.filter(pk__in=namespace_ids)
    report = AuditReport()
    audited = []
    for namespace_id, name in namespaces.values_list("pk", "name"):
        audited.append(namespace_id)
        report.namespaces.append(name)
        # One snapshot at a time: a namespace's snapshot is dropped before the next loads.
        _audit_namespace(report, name, load_namespace(namespace_id))
    report.gap_finalizations.sort()
    report.handed_earlier_text.sort()
    report.undelivered_result_open = _open_on_tasks(audited, "undelivered_result")
    report.never_delivered_open = _open_on_tasks(audited, "never_delivered")
    report.open_by_kind = open_by_kind(audited)
    return report


def open_by_kind(namespace_ids: list[int]) -> dict[str, int]:
    """Open flags of every kind, 0 for a kind with none: a kind the report leaves out
    would read as one that never fires."""
    counts = dict(
        Flag.objects.filter(namespace_id__in=namespace_ids, state=Flag.OPEN)
        .values_list("kind")
        .annotate(n=Count("pk"))
        .values_list("kind", "n")
    )
    return {kind: counts.get(kind, 0) for kind in CATALOGUE}


def _open_on_tasks(namespace_ids: list[int], kind: str) -> list[TaskRef]:
    return sorted(
        TaskRef(name, subject)
        for name, subject in Flag.objects.filter(
            namespace_id__in=namespace_ids, state=Flag.OPEN, kind=kind, subject_type="task"
        ).values_list("namespace__name", "subject_id")
    )


def _audit_namespace(report: AuditReport, name: str, snap: Snapshot) -> None:
    for task in known_tasks(snap):
        report.tasks_seen += 1
        owned = owned_runs(snap, task)
        rr = reading.result_run_by_contract(snap, task)
        carried = rr is not None and rr.ordinal is not None
        later = [
            r for r in owned if r.ordinal is not None and (not carried or r.ordinal > rr.ordinal)
        ]
        gap_run = _gap_run(task, later)
        if gap_run is not None:
            report.gap_finalizations.append(TaskRef(name, task.id))
            if _handed_earlier_text(snap, task, owned, gap_run):
                report.handed_earlier_text.append(TaskRef(name, task.id))
        if not carried:
            continue  # no result run: no result of T is "later" than it
        for run in later:
            if not run.finished or run.finished_at is None:
                continue
            wake = reading.reaching_wake_by_contract(snap, task, run.summary)
            if wake is not None and wake.queued_at is not None:
                report.later_result_delays.append(
                    (wake.queued_at - run.finished_at).total_seconds()
                )


def _gap_run(task: TaskView, later: list[RunView]) -> RunView | None:
    """The first later owned run requested within 3 s at or after T's first terminal report."""
    first = min(
        (report for report in task.reports if report.terminal),
        key=lambda r: (r.at, r.event_id),
        default=None,
    )
    if first is None:
        return None
    for run in later:  # by ordinal
        if run.requested_at is not None and timedelta(0) <= run.requested_at - first.at <= GAP:
            return run
    return None


def _handed_earlier_text(
    snap: Snapshot, task: TaskView, owned: list[RunView], gap_run: RunView
) -> bool:
    earlier = [
        run
        for run in owned
        if run.finished
        and run.summary is not None
        and run.ordinal is not None
        and run.ordinal < gap_run.ordinal
    ]
    handed = reading.handed_by_contract(snap, task)
    return any(reading.carries_text_of(handing, run) for handing in handed for run in earlier)
