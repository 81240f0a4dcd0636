"""What `manage.py report` measures and prints: the audit (`core/detection/audit.py`) of the stored
history or of a T3 Code state database, and the table that shows it with what each count
means. Computing and printing stay apart so that other sources of the same measures can
be added beside the stored history."""

from __future__ import annotations

import textwrap

from supervisor.connectors.t3code.follower import Follower, Progress
from supervisor.connectors.t3code.locate import state_database
from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.detection.audit import HEADER, AuditReport, audit
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.detection.scenario import ThrowAwayStore
from supervisor.core.models import Namespace

# What each count means, printed under the table: the audit is seed 000's hand measure,
# narrower than the flags (a task flagged stale_result need not have been finalized in
# the 3 s gap), so a bare number misled (issue 19, point 8). supervisor/core/detection/audit.py
# has the exact definitions.
MEANINGS = [
    "tasks seen: delegated tasks whose task.delegated arrived, in the namespaces audited.",
    "finalized in the gap before a later run: tasks whose first terminal report came at "
    "most 3 s before a later run of the child (one the task owns, after its result run, or "
    "any it owns when its report carries no run's result) was requested: seed 000's race, "
    "timed. Not a count of stale_result flags: that flag "
    "is any parent handed a text other than the latest result, however far apart the "
    "runs were, so the flags page may list tasks this leaves out.",
    "handed an earlier run's text: of those, tasks whose parent was handed the text of a "
    "run before that later one (an interim text).",
    "undelivered_result open: tasks with an undelivered_result flag open now (a later "
    "result never reached the parent); resolved ones are not counted.",
    "never_delivered open (a starved delivery): tasks with a never_delivered flag open "
    "now: a terminal result the orchestrator will never bring to the parent (T3 caps the "
    "follow-up deliveries of one delegating run, T3 #12285; a wait call died).",
    "later results that reached the parent: results of the task's runs after its result "
    "run that a wake carried to the parent; the delays are from the run's end to that "
    "wake being queued (median; p90 by nearest rank).",
    "share of tasks seen: the count divided by tasks seen.",
    "open flags by kind: every kind Supervisor raises, with its flags open now on any "
    "subject (a task, a parent thread or a source); 0 when none is.",
]


class UnknownNamespace(LookupError):
    """A namespace named for the audit does not exist."""


def audit_stored(names: list[str] | None = None) -> AuditReport:
    """The stored history, in the namespaces named (all when none are)."""
    return audit(namespace_ids(names))


def namespace_ids(names: list[str] | None) -> list[int] | None:
    if not names:
        return None
    found = dict(Namespace.objects.filter(name__in=names).values_list("name", "pk"))
    missing = [name for name in names if name not in found]
    if missing:
        raise UnknownNamespace(f"no namespace named {', '.join(map(repr, missing))}")
    return [found[name] for name in names]


def audit_t3(path: str) -> tuple[AuditReport, Progress]:
    """Follow a T3 Code state database into a fresh throw-away store, judge it now and
    audit it; also what the follower read. The configured database is not touched.
    Raises the follower's StateDBError when the file cannot be read."""
    with ThrowAwayStore():
        source, _ = do_create_source("t3", "t3", "ingest,read")
        follower = Follower(source, state_database(path), evaluate=False)
        try:
            progress = follower.follow()
        finally:
            follower.close()
        evaluate(source.namespace_id, clock.now())
        return audit([source.namespace_id]), progress


def table(report: AuditReport) -> str:
    """The report as an aligned table, followed by what each count means."""
    rows = [HEADER, *report.as_rows()]
    widths = [max(len(row[column]) for row in rows) for column in range(len(HEADER))]
    # Measures left-aligned; numbers right-aligned so their digits line up.
    lines = [
        "  ".join((label.ljust(widths[0]), value.rjust(widths[1]), share.rjust(widths[2]))).rstrip()
        for label, value, share in rows
    ]
    namespaces = ", ".join(report.namespaces) or "(none)"
    kinds = ["open flags by kind:"]
    if report.open_by_kind:
        width = max(len(kind) for kind in report.open_by_kind)
        kinds += [f"  {kind.ljust(width)}  {n:>5}" for kind, n in report.open_by_kind.items()]
    legend = ["What each count means:"] + [
        textwrap.fill(meaning, 88, initial_indent="- ", subsequent_indent="  ")
        for meaning in MEANINGS
    ]
    return "\n".join([f"namespaces: {namespaces}", "", *lines, "", *kinds, "", *legend])
