"""The figures /metrics exposes: counters kept on rows, and gauges read through indexes.

A scrape costs a fixed handful of queries however many sources, flags or events there
are, and none counts the events table: events taken in and refused are counters on the
`Source` row (moved by ingest in the UPDATE it does per batch), open flags are grouped
through `flag_state_kind`, unreplayed dead letters through the partial
`deadletter_unreplayed`. Sources with no event yet, revoked and internal ones have no
`supervisor_source_last_event_age_seconds` series (absent, not NaN: `absent()` and
`unless` read that better than NaN, which compares false with everything).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Min

from supervisor.core import clock
from supervisor.core.flags.kinds import KINDS
from supervisor.core.models import (
    OUT_OF_DATE,
    Action,
    DeadLetter,
    Flag,
    Source,
    SweepFailure,
    Task,
    Thread,
)

# Every kind of flag the contract has; each shows in supervisor_flags_open, 0 when none.
FLAG_KINDS = KINDS


@dataclass
class Family:
    """One metric: its name, type (counter | gauge), help text and samples, each a
    (labels, value) pair."""

    name: str
    type: str
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)


# Families of the apps above core (notify's outbox), each read by a function that
# registers itself from its app's ready(); shown after the actions.
_registered: list[Callable[[], Family]] = []


def register(family: Callable[[], Family]) -> None:
    if family not in _registered:
        _registered.append(family)


def _seconds(now: datetime, then: datetime) -> float:
    return max(0.0, (now - then).total_seconds())


def collect(now: datetime | None = None) -> list[Family]:
    """Every family, read now: eight queries, whatever the numbers of rows."""
    now = now or clock.now()
    sources = list(
        Source.objects.order_by("name").values_list(
            "pk",
            "name",
            "events_accepted",
            "events_rejected",
            "last_event_at",
            "internal",
            "revoked_at",
        )
    )
    return [
        *_event_counters(sources),
        *_evaluation(now),
        _open_flags(),
        _actions(),
        *(family() for family in _registered),
        _source_ages(sources, now),
        _dead_letters(sources),
        _sweep_failures(),
    ]


def _event_counters(sources) -> list[Family]:
    accepted = Family(
        "supervisor_events_ingested_total",
        "counter",
        "Events a source sent that were taken in (new ids; duplicates are not counted).",
    )
    rejected = Family(
        "supervisor_events_rejected_total",
        "counter",
        "Events a source sent that were refused as invalid (each kept as a dead letter).",
    )
    for _pk, name, n_accepted, n_rejected, *_ in sources:
        accepted.samples.append(({"source": name}, n_accepted))
        rejected.samples.append(({"source": name}, n_rejected))
    return [accepted, rejected]


def _evaluation(now: datetime) -> list[Family]:
    oldest, waiting = None, 0
    for model in (Task, Thread):
        row = model.objects.filter(OUT_OF_DATE).aggregate(oldest=Min("last_event_at"), n=Count("*"))
        waiting += row["n"]
        if row["oldest"] is not None and (oldest is None or row["oldest"] < oldest):
            oldest = row["oldest"]
    return [
        Family(
            "supervisor_evaluation_lag_seconds",
            "gauge",
            "Seconds since the oldest event that no evaluation has looked at yet "
            "(tasks and threads); 0 when every subject is evaluated.",
            [({}, _seconds(now, oldest) if oldest else 0)],
        ),
        Family(
            "supervisor_subjects_awaiting_evaluation",
            "gauge",
            "Tasks and threads with an event newer than their last evaluation.",
            [({}, waiting)],
        ),
    ]


def _open_flags() -> Family:
    counts = dict.fromkeys(FLAG_KINDS, 0)
    rows = (
        Flag.objects.filter(state=Flag.OPEN).order_by().values_list("kind").annotate(n=Count("*"))
    )
    counts.update(dict(rows))
    return Family(
        "supervisor_flags_open",
        "gauge",
        "Open flags, by kind (every kind of the contract, 0 when none is open).",
        [({"kind": kind}, n) for kind, n in counts.items()],
    )


def _actions() -> Family:
    counts = {(kind, state): 0 for kind in Action.KINDS for state in Action.STATES}
    rows = Action.objects.order_by().values_list("kind", "state").annotate(n=Count("*"))
    counts.update({(kind, state): n for kind, state, n in rows})
    return Family(
        "supervisor_actions",
        "gauge",
        "Actions (cancel, continue, deliver), by kind and state.",
        [({"kind": kind, "state": state}, n) for (kind, state), n in counts.items()],
    )


def _source_ages(sources, now: datetime) -> Family:
    return Family(
        "supervisor_source_last_event_age_seconds",
        "gauge",
        "Seconds since a source's last valid event; absent for a source with no event "
        "yet, a revoked or an internal one.",
        [
            ({"source": name}, _seconds(now, last))
            for _pk, name, _a, _r, last, internal, revoked in sources
            if last is not None and not internal and revoked is None
        ],
    )


def _dead_letters(sources) -> Family:
    counts = {pk: 0 for pk, *_ in sources}
    rows = (
        DeadLetter.objects.filter(replayed_at=None, source__isnull=False)
        .order_by()
        .values_list("source")
        .annotate(n=Count("*"))
    )
    counts.update(dict(rows))
    return Family(
        "supervisor_dead_letters",
        "gauge",
        "Rejected events kept for an operator to fix and replay, not replayed yet.",
        [({"source": name}, counts[pk]) for pk, name, *_ in sources],
    )


SWEEP_JOBS = ("sweep", "notify_sweep")
SWEEP_SUBJECTS = ("task", "thread", "alert", "step")


def _sweep_failures() -> Family:
    counts = {(job, kind): 0 for job in SWEEP_JOBS for kind in SWEEP_SUBJECTS}
    rows = SweepFailure.objects.order_by().values_list("job", "subject_type").annotate(n=Count("*"))
    counts.update({(job, kind): n for job, kind, n in rows})
    return Family(
        "supervisor_sweep_failures",
        "gauge",
        "Subjects and steps whose last try in a sweep raised (each is tried again with "
        "backoff while the sweep goes on; /admin/failures/ shows them), by job and type.",
        [({"job": job, "subject": kind}, n) for (job, kind), n in counts.items()],
    )
