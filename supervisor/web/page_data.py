"""What each page shows, read from the database without a request.

The views (HTTP) and the fragments (live pushes) both build their template context
here, so a live update renders exactly what a reload would. Each builder runs a fixed
handful of queries, whatever the number of rows.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    OuterRef,
    Q,
    Value,
    When,
    Window,
)
from django.db.models.functions import Coalesce
from django.urls import reverse

from supervisor.core import clock
from supervisor.core.access.roles import ADMIN
from supervisor.core.actions import outcomes as action_outcomes
from supervisor.core.actions.outcomes import LATER_EVENTS
from supervisor.core.actions.writers import SUPERVISOR_ENV, cannot_act, nothing_to_cancel
from supervisor.core.facts import continued, ownership
from supervisor.core.facts.loader import load_for_subjects, load_for_task
from supervisor.core.facts.task_detail import describe_task, timeline, timeline_key
from supervisor.core.flags.kinds import (
    CANCEL,
    CATALOGUE,
    CONTINUE,
    DELIVER,
    KINDS,
    RANK,
    WARNING,
    kind_of,
    severity_of,
)
from supervisor.core.models import (
    Action,
    BackgroundItem,
    Change,
    Environment,
    Flag,
    Namespace,
    Run,
    Source,
    Task,
    Thread,
    Wake,
)
from supervisor.core.queries.pagination import CursorError, decode, encode
from supervisor.core.queries.task_query import PAGE_SIZE, task_queryset
from supervisor.core.triage import silences
from supervisor.core.triage.assignment import assignable_users
from supervisor.notify.models import Channel

from .problems import problem_of, problems_of
from .snooze_times import SNOOZE_CHOICES, SNOOZE_MAX
from .word_diff import word_diff

STATUSES = ("running", "waiting", "completed", "failed", "cancelled", "interrupted")
FLAG_KINDS = tuple(sorted(KINDS))
FLAG_STATES = (("", "any state"), (Flag.OPEN, "open"), (Flag.RESOLVED, "resolved"))
LIST_FILTERS = ("q", "flag", "state", "status", "env", "parent", "namespace", "assigned")
# The list's "assigned to" filter: the viewer, nobody, or a user by name.
ASSIGNED_ME, ASSIGNED_NOBODY = "me", "nobody"
NEEDS_ACTION_LIMIT = 50
LATEST_LIMIT = 10
OVERVIEW_THREAD_FLAGS = 10  # thread flags the overview shows as cards; the rest on a link
TREE_DEPTH = 6  # levels of delegation shown below a thread
THREAD_RUNS = 25  # the newest runs listed on a thread's page
THREAD_TIMELINE = 40  # the newest runs, wakes and items each read for its timeline (> THREAD_RUNS)
TIMELINE_PAGE = 60  # the task page's timeline entries shown at once (twenty runs' worth)


# --- live ---------------------------------------------------------------------------


def last_change_id() -> int:
    """The newest change-log id: a live page resumes from here."""
    return Change.objects.order_by("-id").values_list("id", flat=True).first() or 0


def open_flag_count() -> int:
    """The tab title's count: open flags nobody has taken up (acknowledged, snoozed or
    silenced), as the overview counts them."""
    return Flag.objects.filter(silences.needing_action(clock.now())).count()


def live_context(view: str, pk: int | None = None) -> dict:
    """What base.html needs to make a page live: the socket URL and where to resume."""
    query = {"view": view} | ({"id": pk} if pk is not None else {})
    return {
        "live": {
            "view": view,
            "id": pk,
            "url": "/ws/live/?" + urlencode(query),
            "last_change": last_change_id(),
            "open_flags": open_flag_count(),
        }
    }


# --- shared pieces ------------------------------------------------------------------


def flag_entry(
    flag: Flag, *, url: str | None = None, subject: str | None = None, silence=None
) -> dict:
    """A flag with its words for an operator; `silence`, the one holding it (if any)."""
    evidence = flag.evidence if isinstance(flag.evidence, dict) else {}
    reset = reset_snooze(flag, evidence)
    return {
        "flag": flag,
        "words": kind_of(flag.kind),
        "text": evidence.get("text") or "",
        "events": [e for e in evidence.get("events") or [] if e],
        "url": url,
        "subject": subject or flag.subject_id,
        "resolved_words": resolved_words(flag) if flag.state == Flag.RESOLVED else "",
        "snoozed": flag.snoozed_until is not None and flag.snoozed_until > clock.now(),
        "silence": silence if flag.state == Flag.OPEN else None,
        "reset": reset,
        # The snooze form's `until` (snooze_times reads it so: UTC, to the minute).
        "reset_until": f"{reset:%Y-%m-%dT%H:%M}" if reset else "",
        "subtasks": going_subtasks(flag, evidence),
    }


def going_subtasks(flag: Flag, evidence: dict) -> list[Task]:
    """The sub-tasks a cancel did not reach (cancel_not_propagated names them): linked
    from the flag, as the task's own cancel cannot stop them and each page's can."""
    ids = evidence.get("tasks") if flag.kind == "cancel_not_propagated" else None
    if flag.state != Flag.OPEN or not isinstance(ids, list) or not ids:
        return []
    found = Task.objects.filter(namespace_id=flag.namespace_id, task_id__in=ids[:20], known=True)
    return list(found.only("pk", "task_id", "title").order_by("task_id"))


def reset_snooze(flag: Flag, evidence: dict) -> datetime | None:
    """When an open flag's evidence names a reset (account_limit: the account's limit
    resets then), the time to snooze it until: to the minute, rounded up so the snooze
    ends once the limit has reset; None when no reset is named, it has passed, it is
    further than a snooze may last, or the flag is already snoozed until then."""
    if flag.state != Flag.OPEN or not isinstance(evidence.get("resets_at"), str):
        return None
    try:
        reset = datetime.fromisoformat(evidence["resets_at"].replace("Z", "+00:00"))
    except ValueError:
        return None
    if reset.tzinfo is None:
        reset = reset.replace(tzinfo=UTC)
    if reset.second or reset.microsecond:
        reset = reset.replace(second=0, microsecond=0) + timedelta(minutes=1)
    now = clock.now()
    if flag.snoozed_until is not None and flag.snoozed_until >= reset:
        return None  # already quiet until the reset: offering it again would do nothing
    return reset if now < reset <= now + SNOOZE_MAX else None


def resolved_words(flag: Flag) -> str:
    """What resolved a flag: an operator by hand (who, and the reason), an action that
    answered it, or the orchestrator's later events (the rules' words, when recorded)."""
    if flag.resolved_by_id is not None:
        return f"resolved by hand by {flag.resolved_by.get_username()}: {flag.resolve_reason}"
    return flag.resolve_reason or LATER_EVENTS


def task_rows(tasks: list[Task], found: silences.Active | None = None) -> list[dict]:
    """Each task with its open flags as one problem (None when it has none)."""
    problems = problems_of([t.pk for t in tasks], clock.now(), found)
    rows = []
    for task in tasks:
        problem = problems.get(task.pk)
        task.severity = problem.severity if problem else None
        kinds = [f.kind for f in problem.facets] if problem else []
        rows.append({"task": task, "flags": kinds, "problem": problem})
    return rows


def _tasks():
    return Task.objects.filter(known=True).select_related(
        "namespace", "parent_thread", "child_thread", "assignee"
    )


def _open_flags_exist():
    return Exists(Flag.objects.filter(task=OuterRef("pk"), state=Flag.OPEN))


# --- overview -----------------------------------------------------------------------


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


def _taken_up(now: datetime, found: silences.Active) -> list[Flag]:
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


def _awaiting(now: datetime, found: silences.Active) -> tuple[list[dict], list[dict], list[Task]]:
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
    by_kind = [{"kind": k, "n": kinds[k]} for k in ranked]
    by_env = [
        {"environment": e, "n": n}
        for e, n in sorted(envs.items(), key=lambda i: (i[0] is None, -i[1], i[0] or ""))
    ]
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
    return by_kind, by_env, needing


def _moment(value) -> datetime:
    """A timestamp read by a raw statement: SQLite hands it back as text, in UTC."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
    return value


def overview_context(can_act: bool, *, all_thread_flags: bool = False) -> dict:
    now = clock.now()
    found = silences.active(now)  # once: every count and list below reads them
    by_kind, by_env, needing = _awaiting(now, found)
    taken = _taken_up(now, found)
    latest = list(
        Task.objects.filter(known=True)
        .filter(~_open_flags_exist())
        .order_by("-delegated_at", "-pk")[:LATEST_LIMIT]
    )
    sources = list(
        Source.objects.filter(revoked_at__isnull=True, internal=False)
        .select_related("namespace")
        .order_by("name")
    )
    # Silent sources stay in front even when taken up: they say what the rest of the
    # page can be trusted for. Thread flags come after the tasks needing action, and,
    # like every list of problems, the most severe first, then the longest open. They
    # are cards with forms, as many as there are busy threads: the first
    # OVERVIEW_THREAD_FLAGS of them, and the rest when asked (`all_thread_flags`), with
    # how many there are (a window count).
    open_flags_of = (
        Flag.objects.filter(state=Flag.OPEN).alias(rank=severity_rank()).order_by(*WORST_FIRST)
    )
    other_flags = list(open_flags_of.filter(subject_type="source"))
    on_thread = open_flags_of.filter(subject_type="thread").annotate(total=Window(Count("pk")))
    on_thread = list(on_thread if all_thread_flags else on_thread[:OVERVIEW_THREAD_FLAGS])
    thread_flag_total = on_thread[0].total if on_thread else 0
    other_flags += on_thread
    thread_ids = {f.subject_id for f in other_flags if f.subject_type == "thread"}
    thread_pks: dict[tuple[int, str], int] = {}
    if thread_ids:
        namespaces = {f.namespace_id for f in other_flags if f.subject_type == "thread"}
        rows = Thread.objects.filter(namespace_id__in=namespaces, thread_id__in=thread_ids)
        for ns, name, pk in rows.values_list("namespace_id", "thread_id", "pk"):
            thread_pks[(ns, name)] = pk
    silent, on_threads = [], []
    held = silences.matching([f.pk for f in other_flags], found)
    for flag in other_flags:
        if flag.subject_type == "source":
            subject = f"source {flag.subject_id}"
            silent.append(flag_entry(flag, subject=subject, silence=held.get(flag.pk)))
        else:
            pk = thread_pks.get((flag.namespace_id, flag.subject_id))
            url = reverse("web:thread", args=[pk]) if pk else None
            subject = f"thread {flag.subject_id}"
            on_threads.append(flag_entry(flag, url=url, subject=subject, silence=held.get(flag.pk)))
    silent_names = {f["flag"].subject_id for f in silent}
    return {
        "total_open": sum(row["n"] for row in by_kind),
        "by_kind": [
            {
                **row,
                "words": kind_of(row["kind"]),
                "severity": severity_of(row["kind"]),
                "query": urlencode({"flag": row["kind"]}),
            }
            for row in by_kind
        ],
        "by_env": [
            {**row, "query": urlencode({"env": row["environment"], "state": Flag.OPEN})}
            if row["environment"] is not None
            else row
            for row in by_env
        ],
        "needing": task_rows(needing, found),
        "taken_up": taken,
        "now": now,
        "taken_up_count": Flag.objects.filter(silences.quiet(now, found)).count(),
        "latest": [{"task": t, "flags": []} for t in latest],
        "sources": [{"source": s, "silent": s.name in silent_names} for s in sources],
        "silent_flags": silent,
        "thread_flags": on_threads,
        "thread_flags_more": thread_flag_total - len(on_threads),
        "all_thread_flags": all_thread_flags,
        "can_act": can_act,
        "snooze_choices": SNOOZE_CHOICES,
    }


ADMINS_NAMED = 5


def alerting_gaps(*, name_admins: bool) -> dict | None:
    """What is missing for a flag to alert anyone beyond the open tabs: an enabled
    channel, and an enabled route to one; None when both exist. One query, plus one for
    the admins' names (who can fix it) when something is missing and they are asked."""
    found = Channel.objects.filter(enabled=True).aggregate(
        channels=Count("pk", distinct=True),
        routes=Count("routes", filter=Q(routes__enabled=True), distinct=True),
    )
    if found["channels"] and found["routes"]:
        return None
    admins = []
    if name_admins:
        users = get_user_model().objects.filter(is_active=True, groups__name=ADMIN)
        field = get_user_model().USERNAME_FIELD
        admins = list(users.order_by(field).values_list(field, flat=True)[:ADMINS_NAMED])
    return {"no_channel": not found["channels"], "no_route": not found["routes"], "admins": admins}


# --- task list ----------------------------------------------------------------------


def list_filters(params) -> dict:
    filters = {k: (params.get(k) or "").strip() for k in LIST_FILTERS}
    # `?flag=KIND` alone (older links, the overview) means its open flags.
    if filters["flag"] and "state" not in params:
        filters["state"] = Flag.OPEN
    if filters["state"] not in (Flag.OPEN, Flag.RESOLVED):
        filters["state"] = ""
    return filters


def filter_errors(params, filters: dict) -> list[str]:
    """What is wrong with the list's filters, in words; each one would select nothing
    (or, a state, be dropped), which the page must not pass over in silence."""
    errors = []
    if filters["flag"] and filters["flag"] not in FLAG_KINDS:
        errors.append(f"“{filters['flag']}” is no flag kind")
    state = (params.get("state") or "").strip()
    if state and state not in (Flag.OPEN, Flag.RESOLVED):
        errors.append(f"“{state}” is no flag state (open or resolved)")
    if filters["status"] and filters["status"] not in STATUSES:
        errors.append(f"“{filters['status']}” is no status ({', '.join(STATUSES)})")
    name = filters["namespace"]
    if name and not Namespace.objects.filter(name=name).exists():
        errors.append(f"no namespace is named “{name}”")
    if not _assigned_known(filters["assigned"]):
        errors.append(
            f"no user is named “{filters['assigned']}” (assigned to: me, nobody or a user)"
        )
    return errors


def _assigned_known(value: str) -> bool:
    """Whether the "assigned to" filter names something: empty, me, nobody, or a user."""
    if value in ("", ASSIGNED_ME, ASSIGNED_NOBODY):
        return True
    User = get_user_model()
    return User.objects.filter(**{User.USERNAME_FIELD: value}).exists()


def list_environments() -> list[str]:
    """The environments the list's filter offers: Supervisor's own (deliveries by hand)
    is no machine an operator filters by."""
    names = set(Environment.objects.values_list("name", flat=True)) | target_envs()
    return sorted(names - {SUPERVISOR_ENV})


def form_filters(params) -> dict:
    """The list filters of PARAMS that the list's form can show, the others dropped: a
    flag kind of the catalogue (a flag's id is no kind), a state, a status, and a
    namespace and an environment the form lists. A page that sends an operator back to
    the list (after a bulk action) uses these, so the list shown is the one its form says."""
    filters = {k: v for k, v in list_filters(params).items() if v}
    offered = {"flag": FLAG_KINDS, "status": STATUSES}
    for key, values in offered.items():
        if key in filters and filters[key] not in values:
            del filters[key]
    if "namespace" in filters and not Namespace.objects.filter(name=filters["namespace"]).exists():
        del filters["namespace"]
    if "env" in filters and filters["env"] not in list_environments():
        del filters["env"]
    if "assigned" in filters and not _assigned_known(filters["assigned"]):
        del filters["assigned"]
    return filters


def filtered_tasks(filters: dict, user=None):
    """The known tasks the list's filters (list_filters) select; "assigned to me" means
    `user` (the one looking: a shared view's "mine" is each viewer's own)."""
    tasks = task_queryset(
        q=filters["q"] or None,
        status=filters["status"] or None,
        flag=filters["flag"] or None,
        state=filters["state"] or None,
        namespace=filters["namespace"] or None,
    )
    if filters["env"]:
        tasks = tasks.filter(Q(env=filters["env"]) | Q(target_env=filters["env"]))
    if filters["parent"]:
        tasks = tasks.filter(parent_thread__thread_id=filters["parent"])
    assigned = filters.get("assigned")
    if assigned == ASSIGNED_ME:
        tasks = tasks.filter(assignee=user) if user is not None else tasks.none()
    elif assigned == ASSIGNED_NOBODY:
        tasks = tasks.filter(assignee__isnull=True)
    elif assigned:
        tasks = tasks.filter(**{f"assignee__{get_user_model().USERNAME_FIELD}": assigned})
    return tasks.select_related("assignee")


def target_envs() -> set[str]:
    """The distinct `target_env` values of all tasks, found by skipping through the
    task_target_env index (one probe per value) instead of reading every task."""
    table = connection.ops.quote_name(Task._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE envs(name) AS (
                SELECT MIN(target_env) FROM {table}
                UNION ALL
                SELECT (SELECT MIN(target_env) FROM {table} WHERE target_env > envs.name)
                FROM envs WHERE envs.name IS NOT NULL
            )
            SELECT name FROM envs WHERE name IS NOT NULL
            """
        )
        return {name for (name,) in cursor.fetchall()}


def task_list_context(params, user=None) -> dict:
    filters = list_filters(params)
    errors = filter_errors(params, filters)
    tasks = filtered_tasks(filters, user) if not errors else Task.objects.none()
    cursor = params.get("cursor")
    if cursor:
        try:
            at, pk = decode(cursor, (datetime, int))
        except CursorError:
            at = pk = None
        if pk is not None:
            tasks = tasks.filter(Q(delegated_at__lt=at) | Q(delegated_at=at, pk__lt=pk))
    page = list(tasks.order_by("-delegated_at", "-pk")[: PAGE_SIZE + 1])
    next_cursor = None
    if len(page) > PAGE_SIZE:
        page = page[:PAGE_SIZE]
        next_cursor = encode(page[-1].delegated_at, page[-1].pk)
    active = {k: v for k, v in filters.items() if v}
    environments = list_environments()
    return {
        "rows": task_rows(page),
        "filters": filters,
        "filter_errors": errors,
        "filtered": bool(active),
        "statuses": STATUSES,
        "flag_kinds": FLAG_KINDS,
        "flag_states": FLAG_STATES,
        "environments": environments,
        "namespaces": list(Namespace.objects.order_by("name").values_list("name", flat=True)),
        "assignees": _assignee_names(filters["assigned"]),
        # The filters as a saved view keeps them (saved_views.py checks them again).
        "view_query": urlencode(active),
        "next_cursor": next_cursor,
        "next_query": urlencode({**active, "cursor": next_cursor or ""}),
        "paged": bool(cursor),
    }


def _assignee_names(chosen: str) -> list[str]:
    """The users the "assigned to" filter offers: those who can be assigned, and the
    one chosen (someone who could act once may still hold tasks)."""
    field = get_user_model().USERNAME_FIELD
    names = list(assignable_users().values_list(field, flat=True))
    if chosen and chosen not in (ASSIGNED_ME, ASSIGNED_NOBODY, *names):
        names.append(chosen)
    return names


def task_row_context(task_pk: int) -> dict | None:
    task = _tasks().filter(pk=task_pk).first()
    if task is None:
        return None
    return {"row": task_rows([task])[0]}


# --- task detail --------------------------------------------------------------------


@dataclass
class Step:
    """One line of a thread's timeline."""

    at: datetime | None
    kind: str
    text: str
    subject: str = ""


def _handed(reading) -> list[dict]:
    """The "given" panel's entries, as the operator sees it (core.facts.handover): what reached the
    parent, then what was reported but did not reach it; a diff against the latest result
    only where the text differs (a hand delivery's header is not part of its text)."""
    latest = reading.latest.text if reading.latest else None
    handed = []
    for given in [*reading.reached, *reading.not_reached]:
        same = reading.same_as_latest(given)
        handed.append(
            {
                "text": given.text,
                "via": ", ".join(given.via),
                "reached": given.reached,
                "why_not": given.why_not,
                "by_hand": given.by_hand,
                "same": same,
                "diff": word_diff(given.text, latest)
                if latest is not None and given.reached and not same
                else None,
            }
        )
    return handed


ACTION_LABELS = {
    DELIVER: "Deliver the latest result",
    CONTINUE: "Continue the child",
    CANCEL: "Cancel the task",
}


def suggested_actions(open_flags: list[Flag], unfit: dict[str, str] | None = None) -> list[dict]:
    """The actions the open flags call for (core.flag_kinds), each with the flags behind it;
    an action the task's state rules out carries why (`unfit`) and gets no button."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for flag in open_flags:
        action = kind_of(flag.kind).action
        if action in ACTION_LABELS:
            by_kind[action].append(flag.kind)
    return [
        {
            "kind": kind,
            "label": ACTION_LABELS[kind],
            "flags": sorted(set(by_kind[kind])),
            "unfit": (unfit or {}).get(kind),
        }
        for kind in (DELIVER, CONTINUE, CANCEL)
        if kind in by_kind
    ]


def _unfit_actions(task: Task, snap, view, open_flags: list[Flag]) -> dict[str, str]:
    """Why an action the open flags call for cannot be sent now: the task's state, or no
    connector that can."""
    called = {kind_of(flag.kind).action for flag in open_flags}
    unfit = {}
    for kind in called & set(ACTION_LABELS):
        why = nothing_to_cancel(snap, view) if kind == CANCEL else None
        if why := why or cannot_act(task, kind)[0]:
            unfit[kind] = why
    return unfit


def continued_outcome(snap, view, actions: list) -> dict | None:
    """What the newest continue that the orchestrator took led to (issue 30): the run it
    started, what that run did, and what is left to do (wait, deliver, act, nothing)."""
    last = next(
        (a for a in reversed(actions) if a.kind == CONTINUE and a.state == Action.SUCCEEDED),
        None,
    )
    if last is None:
        return None
    found = continued.what_continued(snap, view, last.wake)
    return {
        "action": last,
        "run": found.run,
        "did": found.did,
        "left": found.left,
        "left_words": found.left_words,
        "deliver_run": found.deliver_run,
    }


def _fit_to_state(
    suggested: list[dict],
    snap,
    view,
    open_flags: list[Flag],
    actions: list,
    cont: dict | None = None,
) -> list[dict]:
    """The suggestions as the task's state and its actions leave them (issue 19):

    - the child finished a later run after a failed report, and the parent does not
      hold it: delivering that result comes first, and Continue is not offered;
    - an action of the kind queued or sending: "under way", no button;
    - an action of the kind that succeeded after its flags opened, while they are still
      open: "sent", what the page waits for, and which flags stay open and why."""
    by_kind = {s["kind"]: s for s in suggested}
    open_kinds = {f.kind for f in open_flags}
    failure = sorted(open_kinds & action_outcomes.FAILURE_KINDS)
    finished_later = action_outcomes.later_results(snap, view)
    later = [r for r in finished_later if not ownership.has_reached_parent(snap, view, r.summary)]
    if failure and finished_later and not later:
        if CONTINUE in by_kind and not by_kind[CONTINUE]["unfit"]:
            by_kind[CONTINUE]["unfit"] = (
                f"the child already finished run {finished_later[0].ordinal} after the failure "
                "and its result has reached the parent: resolve the flags with a reason"
            )
    elif failure and later:
        run = later[0]
        flags = sorted(set(failure) | set(by_kind.get(DELIVER, {}).get("flags", [])))
        by_kind[DELIVER] = {
            "kind": DELIVER,
            "label": f"Deliver the child’s later result (run {run.ordinal})",
            "flags": flags,
            "unfit": (by_kind.get(DELIVER) or {}).get("unfit"),
            "query": urlencode({"run": run.id}),
        }
        if CONTINUE in by_kind and not by_kind[CONTINUE]["unfit"]:
            by_kind[CONTINUE]["unfit"] = (
                f"the child already finished run {run.ordinal} after the failure: deliver "
                "its result instead"
            )
    elif (
        failure
        and CONTINUE in by_kind
        and not by_kind[CONTINUE]["unfit"]
        and (going := action_outcomes.runs_under_way(snap, view))
    ):
        by_kind[CONTINUE]["unfit"] = (
            f"the child’s {continued.run_name(going[-1])} is under way: wait for it to finish"
        )
    resets = [r for f in open_flags if (r := reset_snooze(f, f.evidence or {})) is not None]
    if resets and CONTINUE in by_kind and not by_kind[CONTINUE]["unfit"]:
        # An account limit not reset yet: a continue now fails again on it.
        by_kind[CONTINUE]["unfit"] = (
            f"the account's limit resets at {max(resets):%Y-%m-%d %H:%M} UTC, and a continue "
            "before then fails again: snooze the flag until the reset"
        )
    if cont is not None and cont["deliver_run"] and DELIVER not in by_kind:
        # No flag calls for it (the task may still be reported running), but the
        # continued run's result is the task's latest and the parent does not have it.
        by_kind[DELIVER] = {
            "kind": DELIVER,
            "label": f"Deliver the continued run’s result ({continued.run_name(cont['run'])})",
            "flags": [],
            "why": "what the continue started has finished: the parent does not have it yet",
            "unfit": cannot_act(cont["action"].task, DELIVER)[0],
            "query": urlencode({"run": cont["deliver_run"]}),
        }
    latest = {}
    for action in actions:  # oldest first: the newest of each kind wins
        latest[action.kind] = action
    for kind, s in by_kind.items():
        action = latest.get(kind)
        if action is None or s["unfit"]:
            continue
        opened = max((f.opened_at for f in open_flags if f.kind in s["flags"]), default=None)
        if action.state in (Action.QUEUED, Action.SENDING):
            s["status"] = "under way"
            s["note"] = f"action {action.pk}, {action.state}: its outcome shows here"
        elif action.state == Action.SUCCEEDED and (
            opened is None or action.finished_at is None or action.finished_at >= opened
        ):
            s["status"] = "sent"
            s["note"] = f"action {action.pk} succeeded; " + _waiting_for(
                snap, view, action, open_kinds
            )
    order = (DELIVER, CONTINUE, CANCEL)
    return sorted(by_kind.values(), key=lambda s: (bool(s["unfit"]), order.index(s["kind"])))


def _waiting_for(snap, view, action, open_kinds: set[str]) -> str:
    """After a succeeded action whose flags are still open: what the page waits for, and
    why each of them stays open."""
    if action.kind == CONTINUE:
        started = [
            r
            for r in action_outcomes.runs_under_way(snap, view)
            if r.requested_at is None or r.requested_at >= action.created_at
        ]
        waiting = (
            f"the child’s {continued.run_name(started[-1])} is under way: waiting for it to finish"
            if started
            else "waiting for the child’s run to be reported"
        )
    elif action.kind == DELIVER:
        waiting = "waiting for the recorded delivery to be judged"
    else:
        waiting = "waiting for the orchestrator to report the task cancelled"
    _, stays = action_outcomes.outcomes(snap, view, action.kind, open_kinds, run=action.run_id)
    return waiting + "".join(f"; {kind} stays open: {why}" for kind, why in stays)


BANNER_WORDS = {DELIVER: "Delivery", CONTINUE: "Continue", CANCEL: "Cancel"}
BANNER_KEPT = timedelta(minutes=15)  # how long a finished action's banner stays


def action_banner(actions: list, now: datetime) -> dict | None:
    """The newest action's state, in words, while it is under way and for a while after
    it finished: it follows the action (live), so "queued" goes once it is sent."""
    if not actions:
        return None
    action = actions[-1]
    if action.finished_at is not None and action.finished_at < now - BANNER_KEPT:
        return None
    what = f"{BANNER_WORDS.get(action.kind, action.kind)} {action.state} (action {action.pk})"
    text = {
        Action.QUEUED: f"{what}: waiting to be sent.",
        Action.SENDING: f"{what}: attempt {action.attempts} is being sent.",
        Action.SUCCEEDED: f"{what}: taken by the orchestrator.",
        Action.FAILED: f"{what}: {action.last_error or 'not sent'}.",
    }.get(action.state, f"{what}.")
    return {"state": action.state, "text": text}


def timeline_page(entries: list, before: str | None = None) -> dict:
    """One page of a task's timeline (in time order, `timeline_key`): the newest
    TIMELINE_PAGE entries, or with `before` (a cursor a page gave out) the TIMELINE_PAGE
    entries before that one. A task with hundreds of runs would otherwise render a
    thousand lines; rendering, not reading, is what costs. A cursor this server did not
    give out starts at the newest, as the task list does."""
    end = len(entries)
    paged = False
    if before:
        try:
            at, event_id, kind, subject = decode(before, (datetime, str, str, str))
        except CursorError:
            pass
        else:
            key = (at or ownership.LATEST, event_id or "", kind or "", subject or "")
            end = bisect_left(entries, key, key=timeline_key)
            paged = end < len(entries)
    start = max(0, end - TIMELINE_PAGE)
    earlier_cursor = None
    if start:
        first = entries[start]
        earlier_cursor = encode(
            first.order_at or first.at, first.event_id or "", first.kind, first.subject
        )
    return {
        "timeline": entries[start:end],
        "timeline_total": len(entries),
        "timeline_earlier": start,
        "timeline_later": len(entries) - end,
        "timeline_end": end,
        "timeline_earlier_cursor": earlier_cursor,
        "timeline_paged": paged,
    }


def task_detail_context(task: Task, can_act: bool, *, timeline_before: str | None = None) -> dict:
    snap = load_for_task(task)
    detail = describe_task(task, snap)
    view = snap.tasks[task.task_id]
    flags = list(task.flags.select_related("resolved_by").order_by("state", "-opened_at", "-pk"))
    open_flags = [f for f in flags if f.state == Flag.OPEN]
    actions = list(task.actions.order_by("created_at", "pk"))
    cont = continued_outcome(snap, view, actions)
    now = clock.now()
    held = silences.matching([f.pk for f in open_flags], silences.active(now))
    problem = problem_of(
        [(f.kind, f.acknowledged_at, f.snoozed_until, f.pk in held) for f in open_flags], now
    )
    facets = [
        {
            "facet": facet,
            "entries": [
                flag_entry(f, silence=held.get(f.pk)) for f in open_flags if f.kind == facet.kind
            ],
        }
        for facet in (problem.facets if problem else ())
    ]
    suggested = _fit_to_state(
        suggested_actions(open_flags, _unfit_actions(task, snap, view, open_flags)),
        snap,
        view,
        open_flags,
        actions,
        cont,
    )
    headline = problem.headline.words.action if problem else None
    # The problem's own advice, when the action it names cannot be sent now.
    headline_unfit = next((s for s in suggested if s["kind"] == headline and s["unfit"]), None)
    # ... and, when it can, the action itself: one Tab after the problem, not past its forms.
    headline_ready = next(
        (s for s in suggested if s["kind"] == headline and not s["unfit"] and not s.get("status")),
        None,
    )
    return {
        "task": task,
        "detail": detail,
        "handed": _handed(detail.handover),
        "problem": problem,
        "facets": facets,
        "resolved_flags": [flag_entry(f) for f in flags if f.state != Flag.OPEN],
        **timeline_page(timeline(snap, detail, actions), timeline_before),
        "actions": actions[::-1],
        "banner": action_banner(actions, clock.now()),
        "continued": cont,
        "suggested": suggested,
        "headline_unfit": headline_unfit,
        "headline_ready": headline_ready,
        "action_labels": ACTION_LABELS,
        "can_act": can_act,
        "snooze_choices": SNOOZE_CHOICES,
        # Whom the problem can be given to: only asked when the page offers it.
        "assignable": _assignable(can_act),
    }


def _assignable(can_act: bool) -> list[str]:
    if not can_act:
        return []
    return list(assignable_users().values_list(get_user_model().USERNAME_FIELD, flat=True))


def known_tasks():
    return _tasks()


def known_task(task_pk: int) -> Task | None:
    return _tasks().filter(pk=task_pk).first()


# --- thread -------------------------------------------------------------------------


def thread_context(thread: Thread) -> dict:
    """A parent thread with the tasks it delegated, their children's tasks and so on,
    down to TREE_DEPTH levels: one query per level, one for all their open flags."""
    by_parent: dict[int, list[Task]] = defaultdict(list)
    seen_threads = {thread.pk}
    level = [thread.pk]
    every: list[Task] = []
    depth = 0
    truncated = False
    while level:
        if depth >= TREE_DEPTH:
            truncated = True
            break
        found = list(_tasks().filter(parent_thread_id__in=level).order_by("delegated_at", "pk"))
        every += found
        level = []
        for task in found:
            by_parent[task.parent_thread_id].append(task)
            if task.child_thread_id and task.child_thread_id not in seen_threads:
                seen_threads.add(task.child_thread_id)
                level.append(task.child_thread_id)
        depth += 1
    found = silences.active(clock.now())
    problems = problems_of([t.pk for t in every], clock.now(), found)

    def nodes(thread_pk: int, depth: int, path: frozenset) -> list[dict]:
        out = []
        for task in by_parent.get(thread_pk, []):
            child = task.child_thread_id
            below = (
                nodes(child, depth + 1, path | {child})
                if child and child not in path and depth + 1 < TREE_DEPTH
                else []
            )
            out.append(
                {
                    "task": task,
                    "problem": problems.get(task.pk),
                    "children": below,
                    "depth": depth,
                    # Deeper levels were not read: the child thread's own page shows them.
                    "more_below": bool(child) and truncated and depth + 1 >= TREE_DEPTH,
                }
            )
        return out

    delegated_by = (
        Task.objects.filter(known=True, child_thread=thread)
        .select_related("parent_thread")
        .order_by("follow_up_of", "delegated_at", "pk")
        .first()
    )
    thread_flags = list(
        Flag.objects.filter(
            namespace_id=thread.namespace_id, subject_type="thread", subject_id=thread.thread_id
        )
        .select_related("resolved_by")  # a resolved card names who resolved it
        # Open ones as every list of problems (worst, then longest open); resolved ones,
        # the history below them, newest first.
        .alias(
            open_rank=Case(When(state=Flag.OPEN, then=severity_rank()), default=Value(0)),
            open_since=Case(When(state=Flag.OPEN, then=F("opened_at"))),
        )
        .order_by(
            "state", F("open_rank").desc(), F("open_since").asc(nulls_last=True), "-opened_at"
        )
    )
    held = silences.matching([f.pk for f in thread_flags if f.state == Flag.OPEN], found)
    return {
        "thread": thread,
        "tree": nodes(thread.pk, 0, frozenset({thread.pk})),
        "task_count": len(every),
        "truncated": truncated,
        "depth_limit": TREE_DEPTH,
        "delegated_by": delegated_by,
        "thread_flags": [flag_entry(f, silence=held.get(f.pk)) for f in thread_flags],
        "can_act": False,
    }


def thread_activity(thread: Thread) -> dict:
    """A thread's newest runs (each with its trigger, result in short, and the task that
    owns it, with why) and a timeline of its runs, wakes and background items in time
    order. Bounded: a fixed number of queries and rows, whatever the thread's length;
    only the ownership, a fixed point over the thread's runs, reads them all (as the
    task page does), and only when a known task delegated to this thread."""
    read = list(
        Run.objects.filter(thread=thread).order_by(F("ordinal").desc(nulls_last=True), "-pk")[
            :THREAD_TIMELINE
        ]
    )
    runs = read[:THREAD_RUNS]
    run_total = len(read)
    if run_total == THREAD_TIMELINE:
        run_total = Run.objects.filter(thread=thread).count()
    owners = _run_owners(thread, runs)
    rows = [{"run": run, **owners.get(run.run_id, {})} for run in runs]
    return {
        "runs": rows,
        "runs_more": run_total - len(runs),
        "run_total": run_total,
        **_thread_timeline(thread, read),
    }


def _run_owners(thread: Thread, runs: list[Run]) -> dict[str, dict]:
    """run id -> {"owner": the Task owning it or None, "why": ownership's words}."""
    tasks = {t.task_id: t for t in Task.objects.filter(known=True, child_thread=thread)}
    if not tasks or not runs:
        return {}
    snap = load_for_subjects(thread.namespace_id, set(tasks), {thread.thread_id})
    views = [snap.tasks[task_id] for task_id in tasks if task_id in snap.tasks]
    owned = {v.id: {r.id for r in ownership.owned_runs(snap, v)} for v in views}
    # A run no task owns is explained against the task delegated first, not a follow-up.
    first = min(
        views, key=lambda v: (v.follow_up_of is not None, v.delegated_at or ownership.LATEST)
    )
    out = {}
    for run in runs:
        view = snap.runs.get(run.run_id)
        if view is None:  # arrived after the snapshot was read
            continue
        owner = next((v for v in views if run.run_id in owned[v.id]), None)
        judged = owner or first
        out[run.run_id] = {
            "owner": tasks[owner.id] if owner else None,
            "why": ownership.owning(snap, judged, view).words,
        }
    return out


def _thread_timeline(thread: Thread, runs: list[Run]) -> dict:
    """The newest THREAD_TIMELINE runs (read by the caller), wakes to the thread and
    background items, as dated steps in time order. Where a kind had more, the steps
    before its oldest one read are dropped (some of that kind would be missing there)
    and `since` says so."""
    newest = THREAD_TIMELINE
    wakes = list(
        Wake.objects.filter(thread=thread).order_by(F("queued_at").desc(nulls_last=True), "-pk")[
            :newest
        ]
    )
    items = list(
        BackgroundItem.objects.filter(thread=thread).order_by(
            F("started_at").desc(nulls_last=True), "-pk"
        )[:newest]
    )
    steps: list[Step] = []
    for run in runs:
        label = f"run {run.ordinal if run.ordinal is not None else '?'}"
        trigger = run.trigger_kind or "unknown trigger"
        if run.requested_event:
            steps.append(
                Step(
                    run.requested_at, "run.requested", f"{label} requested ({trigger})", run.run_id
                )
            )
        if run.started_event:
            steps.append(Step(run.started_at, "run.started", f"{label} started", run.run_id))
        if run.finished_event:
            text = f"{label} {run.status}: {run.summary or run.error or ''}".strip().rstrip(":")
            steps.append(Step(run.finished_at, "run.finished", text, run.run_id))
    for wake in wakes:
        if wake.queued_event:
            source = wake.source_kind or "?"
            named = wake.source_task or wake.source_item or wake.source_thread
            text = f"wake queued ({source}{' ' + named if named else ''}"
            text += f", {wake.outcome})" if wake.outcome else ")"
            if wake.summary:
                text += f": {wake.summary}"
            steps.append(Step(wake.queued_at, "wake.queued", text, wake.wake_id))
        if wake.delivered_event:
            into = f" into {wake.delivered_run}" if wake.delivered_run else ""
            steps.append(
                Step(wake.delivered_at, "wake.delivered", f"wake delivered{into}", wake.wake_id)
            )
    for item in items:
        name = f"{item.kind or 'item'} {item.label or item.item_id}"
        if item.started_event:
            steps.append(
                Step(item.started_at, "background.started", f"{name} started", item.item_id)
            )
        if item.finished_event:
            status = f" ({item.finish_status})" if item.finish_status else ""
            steps.append(
                Step(
                    item.finished_at,
                    "background.finished",
                    f"{name} finished{status}",
                    item.item_id,
                )
            )
    # Where a kind was cut, its oldest row read marks how far back the timeline is whole.
    cut = [
        oldest
        for rows, when in (
            (runs, lambda r: r.requested_at or r.started_at),
            (wakes, lambda w: w.queued_at),
            (items, lambda i: i.started_at),
        )
        if len(rows) == newest and (oldest := when(rows[-1])) is not None
    ]
    since = max(cut) if cut else None
    dated = [s for s in steps if s.at is not None and (since is None or s.at >= since)]
    dated.sort(key=lambda s: (s.at, s.kind, s.subject))
    undated = [s for s in steps if s.at is None]
    return {"timeline": dated + undated, "timeline_since": since}
