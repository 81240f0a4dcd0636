"""The overview: the flags awaiting attention (by kind and environment), the tasks needing
action, thread and source flags as cards, what someone took up, the latest quiet tasks
and the sources (core.queries.overview reads them); and what is missing for a flag to
alert anyone."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.db.models import Count, Q
from django.urls import reverse

from supervisor.core.access.roles import ADMIN
from supervisor.core.flags.kinds import kind_of, severity_of
from supervisor.core.models import Flag
from supervisor.core.queries import overview as queries
from supervisor.notify.models import Channel

from ..snooze_times import SNOOZE_CHOICES
from .flag_cards import flag_entry
from .task_list import task_rows

ADMINS_NAMED = 5


def overview_context(can_act: bool, *, all_thread_flags: bool = False) -> dict:
    # Silent sources stay in front even when taken up: they say what the rest of the
    # page can be trusted for. Thread flags come after the tasks needing action, and,
    # like every list of problems, the most severe first, then the longest open. They
    # are cards with forms, as many as there are busy threads: the first
    # OVERVIEW_THREAD_FLAGS of them, and the rest when asked (`all_thread_flags`), with
    # how many there are.
    found = queries.overview(all_thread_flags=all_thread_flags)
    held = found.held
    silent = [
        flag_entry(flag, subject=f"source {flag.subject_id}", silence=held.get(flag.pk))
        for flag in found.source_flags
    ]
    on_threads = []
    for flag in found.thread_flags:
        pk = found.thread_pks.get((flag.namespace_id, flag.subject_id))
        url = reverse("web:thread", args=[pk]) if pk else None
        subject = f"thread {flag.subject_id}"
        on_threads.append(flag_entry(flag, url=url, subject=subject, silence=held.get(flag.pk)))
    silent_names = {f["flag"].subject_id for f in silent}
    awaiting = found.awaiting
    return {
        "total_open": sum(n for _, n in awaiting.by_kind),
        "by_kind": [
            {
                "kind": kind,
                "n": n,
                "words": kind_of(kind),
                "severity": severity_of(kind),
                "query": urlencode({"flag": kind}),
            }
            for kind, n in awaiting.by_kind
        ],
        "by_env": [
            {"environment": env, "n": n, "query": urlencode({"env": env, "state": Flag.OPEN})}
            if env is not None
            else {"environment": env, "n": n}
            for env, n in awaiting.by_env
        ],
        "needing": task_rows(awaiting.needing, found.found),
        "taken_up": found.taken_up,
        "now": found.now,
        "taken_up_count": found.taken_up_count,
        "latest": [{"task": t, "flags": []} for t in found.latest],
        "sources": [{"source": s, "silent": s.name in silent_names} for s in found.sources],
        "silent_flags": silent,
        "thread_flags": on_threads,
        "thread_flags_more": found.thread_flag_total - len(on_threads),
        "all_thread_flags": all_thread_flags,
        "can_act": can_act,
        "snooze_choices": SNOOZE_CHOICES,
    }


def alerting_gaps(*, name_admins: bool) -> dict | None:
    """What is missing for a flag to alert anyone beyond the open tabs: an enabled
    channel, and an enabled route to one; None when both exist. One query, plus one for
    the admins' names (who can fix it) when something is missing and they are asked.

    Read here, not in core.queries: channels and routes are notify's, above core."""
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
