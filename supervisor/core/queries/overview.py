"""The overview's queries: the flags awaiting attention counted by kind and environment,
the tasks needing action (the most severe first, then the one that waited longest),
what someone took up, the latest quiet tasks, the sources, and the open flags of
sources and threads. Plain data: the page shapes it into words and links.

A fixed handful of statements, whatever the number of flags and tasks."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection
from django.db.models import Case, Count, Exists, F, OuterRef, Value, When, Window
from django.db.models.functions import Coalesce

from supervisor.core import clock
from supervisor.core.flags.kinds import CATALOGUE, RANK, WARNING, severity_of
from supervisor.core.models import Flag, Source, Task, Thread
from supervisor.core.triage import silences

NEEDS_ACTION_LIMIT = 50
LATEST_LIMIT = 10
OVERVIEW_THREAD_FLAGS = 10  # thread flags the overview shows as cards; the rest on a link


def severity_rank():
    """A flag's severity as RANK's number, in the database: lists of problems sort by it
    (the worst first), then by age (the longest open first)."""
    return Case(
        *[
            When(kind=kind, then=Value(RANK[entry.severity]))
            for kind, entry in CATALOGUE.items()
            if entry.severity != WARNING
        ],
        default=Value(RANK[WARNING]),
    )


WORST_FIRST = (F("rank").desc(), "opened_at", "pk")  # after .alias(rank=severity_rank())


@dataclass(frozen=True)
class Awaiting:
    """The flags awaiting attention: (kind, count) and (environment or None, count), the
    most first; and the known tasks with such flags, each with `severity` and
    `waiting_since` set."""

    by_kind: list[tuple[str, int]]
    by_env: list[tuple[str | None, int]]
    needing: list[Task]


@dataclass(frozen=True)
class Overview:
    now: datetime
    found: silences.Active  # the silences every count and list below read
    awaiting: Awaiting
    taken_up: list[Flag]  # each with `severity` and `silence` set
    taken_up_count: int
    latest: list[Task]  # the newest known tasks with no open flag
    sources: list[Source]
    source_flags: list[Flag]  # open flags of sources, the worst first
    thread_flags: list[Flag]  # open flags of threads, the worst first (some, or all)
    thread_flag_total: int
    thread_pks: dict[tuple[int, str], int]  # (namespace id, thread id) -> Thread pk
    held: dict  # flag pk -> the silence holding it, for the flags of sources and threads


def overview(*, all_thread_flags: bool = False) -> Overview:
    now = clock.now()
    found = silences.active(now)  # once: every count and list below reads them
    open_flags_of = (
        Flag.objects.filter(state=Flag.OPEN).alias(rank=severity_rank()).order_by(*WORST_FIRST)
    )
    source_flags = list(open_flags_of.filter(subject_type="source"))
    on_thread = open_flags_of.filter(subject_type="thread").annotate(total=Window(Count("pk")))
    thread_flags = list(on_thread if all_thread_flags else on_thread[:OVERVIEW_THREAD_FLAGS])
    return Overview(
        now=now,
        found=found,
        awaiting=awaiting(now, found),
        taken_up=taken_up(now, found),
        taken_up_count=Flag.objects.filter(silences.quiet(now, found)).count(),
        latest=list(
            Task.objects.filter(known=True)
            .filter(~Exists(Flag.objects.filter(task=OuterRef("pk"), state=Flag.OPEN)))
            .order_by("-delegated_at", "-pk")[:LATEST_LIMIT]
        ),
        sources=list(
            Source.objects.filter(revoked_at__isnull=True, internal=False)
            .select_related("namespace")
            .order_by("name")
        ),
        source_flags=source_flags,
        thread_flags=thread_flags,
        thread_flag_total=thread_flags[0].total if thread_flags else 0,
        thread_pks=thread_pks(thread_flags),
        held=silences.matching([f.pk for f in source_flags + thread_flags], found),
    )


def thread_pks(flags: list[Flag]) -> dict[tuple[int, str], int]:
    """(namespace id, thread id) -> the Thread's pk, for the threads the flags sit on."""
    names = {f.subject_id for f in flags}
    if not names:
        return {}
    namespaces = {f.namespace_id for f in flags}
    rows = Thread.objects.filter(namespace_id__in=namespaces, thread_id__in=names)
    return {(ns, name): pk for ns, name, pk in rows.values_list("namespace_id", "thread_id", "pk")}


def taken_up(now: datetime, found: silences.Active) -> list[Flag]:
    """Open flags of known tasks someone acknowledged, snoozed or silenced: shown apart,
    with who and until when (`silence`: the one holding it), the most severe first, then
    the longest open."""
    flags = list(
        Flag.objects.filter(silences.quiet(now, found), task__known=True)
        .select_related("task", "acknowledged_by")
        .alias(rank=severity_rank())
        .order_by(*WORST_FIRST)[:NEEDS_ACTION_LIMIT]
    )
    held = silences.matching([f.pk for f in flags], found)
    for flag in flags:
        flag.severity = severity_of(flag.kind)
        flag.silence = held.get(flag.pk)
    return flags


def awaiting(now: datetime, found: silences.Active) -> Awaiting:
    """The flags awaiting attention counted by kind and, for task flags, by their task's
    environment (the most first); and the known tasks with such flags, the most severe
    first, then the one that has waited longest (since its oldest such flag opened),
    each with `severity` and `waiting_since`, NEEDS_ACTION_LIMIT of them.

    One statement reads the open flags once, each joined to its task on the task's key
    (one index probe per open flag, never the whole task table), and groups them both
    ways; and one reads the tasks shown. Two queries whatever the number of tasks."""
    rank = severity_rank()
    flags = (
        Flag.objects.filter(silences.needing_action(now, found))
        .order_by()
        .values_list(
            "kind",
            "task_id",
            "opened_at",
            "task__known",
            Coalesce("task__target_env", "task__env", Value("default")),
            rank,
        )
    )
    sql, params = flags.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH awaiting (kind, task_id, opened_at, known, env, rnk) AS ({sql}),
            counts AS (
                SELECT kind, CASE WHEN task_id IS NULL THEN NULL ELSE env END AS env,
                       COUNT(*) AS n, MIN(opened_at) AS oldest
                FROM awaiting GROUP BY 1, 2
            ),
            needing AS (
                SELECT task_id, MAX(rnk) AS worst, MIN(opened_at) AS since
                FROM awaiting WHERE known GROUP BY task_id
                ORDER BY worst DESC, since, task_id LIMIT %s
            )
            SELECT kind, env, n, NULL, oldest FROM counts
            UNION ALL
            SELECT NULL, NULL, task_id, worst, since FROM needing
            """,
            [*params, NEEDS_ACTION_LIMIT],
        )
        rows = cursor.fetchall()
    kinds: dict[str, int] = defaultdict(int)
    oldest: dict[str, datetime] = {}
    envs: dict[str | None, int] = defaultdict(int)
    first = []
    for kind, env, n, worst, since in rows:
        if kind is None:
            first.append((-worst, _moment(since), n))
            continue
        kinds[kind] += n
        oldest[kind] = min(oldest.get(kind, _moment(since)), _moment(since))
        envs[env] += n  # None: on a thread or a source, no task's environment
    # Kinds as problems are listed: the most severe first, then the longest open.
    ranked = sorted(kinds, key=lambda k: (-RANK[severity_of(k)], oldest[k], k))
    by_env = sorted(envs.items(), key=lambda i: (i[0] is None, -i[1], i[0] or ""))
    first.sort()
    # The overview's rows name no thread or namespace: the tasks alone.
    tasks = Task.objects.select_related("assignee").in_bulk([pk for _, _, pk in first])
    words = {rank: level for level, rank in RANK.items()}
    needing = []
    for worst, since, pk in first:
        task = tasks.get(pk)
        if task is None:  # deleted in between
            continue
        task.severity, task.waiting_since = words[-worst], since
        needing.append(task)
    return Awaiting([(k, kinds[k]) for k in ranked], by_env, needing)


def _moment(value) -> datetime:
    """A timestamp read by a raw statement: SQLite hands it back as text, in UTC."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
    return value
