"""A task's open flags as one problem: the worst severity, one headline kind, the other
kinds as facets.

An operator triages tasks, not flags: a stale result usually comes with a premature
completion, and showing them as two problems doubles the count and splits the advice.
The headline is the most severe kind nobody has taken up (what needs looking at now, as
"Tasks needing action" ranks it), and among equals the one whose suggested action settles
the most (deliver before continue before cancel before a look).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from supervisor.core.flags.kinds import CANCEL, CONTINUE, DELIVER, RANK, FlagKind, kind_of
from supervisor.core.models import Flag
from supervisor.core.triage import silences

# Among kinds of equal severity, which one heads the problem: the action that settles
# most first, then the kind that says most about what the parent holds (`tells`).
ACTION_ORDER = {DELIVER: 0, CONTINUE: 1, CANCEL: 2}


@dataclass(frozen=True)
class Facet:
    kind: str
    words: FlagKind
    severity: str
    taken_up: bool  # acknowledged, snoozed until later than now, or silenced


@dataclass(frozen=True)
class Problem:
    facets: tuple[Facet, ...]  # the headline first

    @property
    def headline(self) -> Facet:
        return self.facets[0]

    @property
    def others(self) -> tuple[Facet, ...]:
        return self.facets[1:]

    @property
    def severity(self) -> str:
        """The headline's: the worst of what awaits attention, else of what was taken up."""
        return self.headline.severity

    @property
    def taken_up(self) -> bool:
        """Every one of its flags is taken up: nobody needs to look now."""
        return all(f.taken_up for f in self.facets)


def _order(facet: Facet) -> tuple:
    return (
        facet.taken_up,
        -RANK[facet.severity],
        ACTION_ORDER.get(facet.words.action, len(ACTION_ORDER)),
        (facet.words.tells is None, facet.words.tells or 0),
        facet.kind,
    )


def problem_of(flags: list[tuple], now: datetime):
    """The problem of one task from its open flags as (kind, acknowledged_at,
    snoozed_until[, silenced]); None when it has none."""
    facets: dict[str, Facet] = {}
    for kind, acknowledged_at, snoozed_until, *silenced in flags:
        taken = (
            acknowledged_at is not None
            or (snoozed_until is not None and snoozed_until > now)
            or any(silenced)
        )
        seen = facets.get(kind)
        # Two open flags of one kind (two subjects' worth) are one facet: open if either is.
        if seen is None or (seen.taken_up and not taken):
            entry = kind_of(kind)
            facets[kind] = Facet(kind, entry, entry.severity, taken)
    if not facets:
        return None
    return Problem(tuple(sorted(facets.values(), key=_order)))


def problems_of(
    task_pks, now: datetime, found: silences.Active | None = None
) -> dict[int, Problem]:
    """Each task's problem, in one query whatever the number of tasks (and the active
    silences `found`, read here when not given)."""
    found = silences.active(now) if found is None else found
    flags: dict[int, list] = defaultdict(list)
    rows = (
        Flag.objects.filter(task_id__in=list(task_pks), state=Flag.OPEN)
        .annotate(silenced=silences.is_silenced(found))
        .values_list("task_id", "kind", "acknowledged_at", "snoozed_until", "silenced")
    )
    for task_id, *flag in rows:
        flags[task_id].append(flag)
    return {pk: problem for pk, found in flags.items() if (problem := problem_of(found, now))}
