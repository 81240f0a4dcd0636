"""Silences by matcher, as Alertmanager has them: the open flags a silence matches stay
open but quiet until it ends, like snoozed ones: they need no action and send no alerts.

Every count and list of flags that need action, and every alert, asks this module: the
active silences are read once (`active`: a few rows, whatever the number of flags) and
turned into one Q (`quiet`, `needing_action`) or one annotation (`matching`) that the
database evaluates with the flags, so no page or sweep matches flags one by one.

A matcher left empty matches anything; a silence sets at least one. A flag matches:
- `kinds`: its kind is one of them;
- `sources`: it is in the namespace one of these sources reports into (as routes read
  sources);
- `environments`: its task's target environment (else its environment, else
  "default": as the overview counts by environment) is one of them;
- `title_words`: each word appears in its task's title, in any case.
Flags on threads and sources have no task: a silence with environments or title words
does not match them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import BooleanField, Case, Count, IntegerField, Q, Value, When

from supervisor.core import changes
from supervisor.core.changes import ChangeKind
from supervisor.core.flags.kinds import KINDS
from supervisor.core.flags.writers import awaiting_attention, taken_up
from supervisor.core.models import Flag, Silence, Source

SILENCE_MAX = timedelta(days=30)  # as a snooze: a longer quiet is a resolve
DEFAULT_ENV = "default"
MATCHERS = ("kinds", "sources", "environments", "title_words")

# Called with (silence as it was, now) when a silence ends or is edited: the alerts it
# held are due again (NotifyConfig.ready registers notify's), in the same transaction.
_lifted_hooks: list[Callable[[Silence, datetime], object]] = []


def on_silence_lifted(hook: Callable[[Silence, datetime], object]) -> None:
    if hook not in _lifted_hooks:
        _lifted_hooks.append(hook)


class SilenceError(ValueError):
    """A silence that cannot be saved or ended; `field` names the form field at fault."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Active:
    """The silences active at one moment, with their sources' namespaces resolved."""

    silences: tuple[Silence, ...]  # the longest-lasting first
    namespaces: dict[str, frozenset[int]]  # source name -> its namespace (one, or none)

    def __bool__(self) -> bool:
        return bool(self.silences)


def active(now: datetime) -> Active:
    """The silences active at `now`: two small queries, once per request or sweep."""
    return _resolved(tuple(Silence.objects.filter(ends_at__gt=now).order_by("-ends_at", "pk")))


def alone(silence: Silence) -> Active:
    """One silence, active or not, as `matcher` and `matching` read it."""
    return _resolved((silence,))


def _resolved(silences: tuple[Silence, ...]) -> Active:
    names = {name for s in silences for name in s.sources}
    namespaces: dict[str, set[int]] = {}
    if names:
        for name, ns in Source.objects.filter(name__in=names).values_list("name", "namespace_id"):
            namespaces.setdefault(name, set()).add(ns)
    return Active(silences, {k: frozenset(v) for k, v in namespaces.items()})


def matcher(silence: Silence, found: Active) -> Q:
    """The flags `silence` matches, as a Q on Flag (open or not)."""
    q = Q()
    if silence.kinds:
        q &= Q(kind__in=silence.kinds)
    if silence.sources:
        namespaces = {ns for name in silence.sources for ns in found.namespaces.get(name, ())}
        q &= Q(namespace_id__in=sorted(namespaces))
    if silence.environments:
        envs = list(silence.environments)
        env = Q(task__target_env__in=envs) | Q(task__target_env__isnull=True, task__env__in=envs)
        if DEFAULT_ENV in envs:
            env |= Q(task__isnull=False, task__target_env__isnull=True, task__env__isnull=True)
        q &= Q(task__isnull=False) & env
    for word in silence.title_words:
        q &= Q(task__isnull=False, task__title__icontains=word)
    return q


def silenced(found: Active) -> Q:
    """Flags some active silence matches (open or not); matches nothing without one."""
    q = Q(pk__in=[])
    for silence in found.silences:
        q |= matcher(silence, found)
    return q


def needing_action(now: datetime, found: Active | None = None) -> Q:
    """Open flags nobody has taken up and no silence holds: what every count of flags
    awaiting attention, "needing action" and the tab's count read."""
    found = active(now) if found is None else found
    q = awaiting_attention(now)
    return q & ~silenced(found) if found else q


def quiet(now: datetime, found: Active | None = None) -> Q:
    """Open flags acknowledged, snoozed past `now` or silenced: the others of the open."""
    found = active(now) if found is None else found
    q = taken_up(now)
    return q | (Q(state=Flag.OPEN) & silenced(found)) if found else q


def is_silenced(found: Active):
    """Whether some active silence matches the flag, as an annotation (a boolean)."""
    if not found:
        return Value(False, output_field=BooleanField())
    return Case(When(silenced(found), then=Value(True)), default=Value(False))


def matching(flag_pks: Sequence[int], found: Active) -> dict[int, Silence]:
    """The silence that holds each of these flags (the longest-lasting of those that
    match), for the flags some silence matches: one query, whatever their number."""
    if not found or not flag_pks:
        return {}
    which = Case(
        *[When(matcher(s, found), then=Value(s.pk)) for s in found.silences],
        default=None,
        output_field=IntegerField(),
    )
    by_pk = {s.pk: s for s in found.silences}
    rows = (
        Flag.objects.filter(pk__in=list(flag_pks))
        .annotate(silence_pk=which)
        .filter(silence_pk__isnull=False)
        .values_list("pk", "silence_pk")
    )
    return {pk: by_pk[silence_pk] for pk, silence_pk in rows}


def held_counts(found: Active, namespace_id: int | None = None) -> dict[int, int]:
    """How many open flags each active silence matches (in `namespace_id`, if given): one
    aggregate query for them all. A flag two silences match counts for both."""
    if not found:
        return {}
    flags = Flag.objects.filter(state=Flag.OPEN)
    if namespace_id is not None:
        flags = flags.filter(namespace_id=namespace_id)
    counts = flags.aggregate(
        **{f"s{s.pk}": Count("pk", filter=matcher(s, found)) for s in found.silences}
    )
    return {s.pk: counts[f"s{s.pk}"] for s in found.silences}


# --- writers ------------------------------------------------------------------------


def describe(silence: Silence) -> str:
    """Its matchers in words, as lists and the audit name them."""
    parts = []
    if silence.kinds:
        parts.append("kind " + " or ".join(silence.kinds))
    if silence.sources:
        parts.append("source " + " or ".join(silence.sources))
    if silence.environments:
        parts.append("environment " + " or ".join(silence.environments))
    if silence.title_words:
        parts.append("title with " + " and ".join(f"“{w}”" for w in silence.title_words))
    return "; ".join(parts) or "anything"


def _subject(silence: Silence) -> changes.Subject:
    facts = {"silence": silence.pk, "matchers": describe(silence)}
    return changes.Subject("silence", str(silence.pk), None, facts)


def _clean(
    kinds, sources, environments, title_words, reason: str, ends_at: datetime, now: datetime
) -> dict:
    """The silence's fields, checked; SilenceError naming the field otherwise."""
    kinds = sorted({k.strip() for k in kinds or () if k and k.strip()})
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise SilenceError(f"Flag kinds: no flag kind is named {', '.join(unknown)}.", "kinds")
    sources = sorted({s.strip() for s in sources or () if s and s.strip()})
    known = set(Source.objects.filter(name__in=sources).values_list("name", flat=True))
    unknown = [s for s in sources if s not in known]
    if unknown:
        raise SilenceError(f"Sources: no source is named {', '.join(unknown)}.", "sources")
    environments = sorted({e.strip() for e in environments or () if e and e.strip()})
    words = list(dict.fromkeys(w.strip() for w in title_words or () if w and w.strip()))
    if not (kinds or sources or environments or words):
        raise SilenceError(
            "Matchers: set at least one of flag kinds, sources, environments or title words "
            "(a silence of everything is a resolve)."
        )
    reason = (reason or "").strip()
    if not reason:
        raise SilenceError("Reason: say why these flags are silenced.", "reason")
    if ends_at <= now:
        raise SilenceError("Until: the end must be in the future.", "until")
    if ends_at - now > SILENCE_MAX:
        raise SilenceError(f"Until: a silence lasts at most {SILENCE_MAX.days} days.", "until")
    return {
        "kinds": kinds,
        "sources": sources,
        "environments": environments,
        "title_words": words,
        "reason": reason,
        "ends_at": ends_at,
    }


def do_create_silence(
    *,
    kinds=(),
    sources=(),
    environments=(),
    title_words=(),
    reason: str,
    ends_at: datetime,
    now: datetime,
    by=None,
    actor: str = "",
) -> Silence:
    fields = _clean(kinds, sources, environments, title_words, reason, ends_at, now)
    with transaction.atomic():
        silence = Silence.objects.create(starts_at=now, created_by=by, **fields)
        changes.record(
            ChangeKind.SILENCE_CREATED,
            _subject(silence),
            actor=actor,
            reason=silence.reason,
            until=silence.ends_at.isoformat(),
        )
    return silence


def do_edit_silence(
    silence: Silence,
    *,
    kinds=(),
    sources=(),
    environments=(),
    title_words=(),
    reason: str,
    ends_at: datetime,
    now: datetime,
    actor: str = "",
) -> Silence:
    """Change an active silence; the same values again change nothing (no audit row)."""
    fields = _clean(kinds, sources, environments, title_words, reason, ends_at, now)
    with transaction.atomic():
        silence = Silence.objects.select_for_update().get(pk=silence.pk)
        if silence.ends_at <= now:
            raise SilenceError("This silence has ended; create a new one instead.")
        changed = [name for name, value in fields.items() if getattr(silence, name) != value]
        if not changed:
            return silence
        before = Silence(**{f.attname: getattr(silence, f.attname) for f in Silence._meta.fields})
        for name in changed:
            setattr(silence, name, fields[name])
        silence.save(update_fields=changed)
        changes.record(
            ChangeKind.SILENCE_EDITED,
            _subject(silence),
            actor=actor,
            changed=changed,
            reason=silence.reason,
            until=silence.ends_at.isoformat(),
        )
        for hook in _lifted_hooks:
            hook(before, now)
    return silence


def do_end_silence(silence: Silence, now: datetime, *, by=None, actor: str = "") -> Silence:
    """End a silence now: its flags need action again. Ending an ended one changes nothing."""
    with transaction.atomic():
        silence = Silence.objects.select_for_update().get(pk=silence.pk)
        if silence.ends_at <= now:
            return silence
        before_end = silence.ends_at
        silence.ends_at, silence.ended_at, silence.ended_by = now, now, by
        silence.save(update_fields=["ends_at", "ended_at", "ended_by"])
        changes.record(ChangeKind.SILENCE_ENDED, _subject(silence), actor=actor)
        before = Silence(**{f.attname: getattr(silence, f.attname) for f in Silence._meta.fields})
        before.ends_at = before_end
        for hook in _lifted_hooks:
            hook(before, now)
    return silence
