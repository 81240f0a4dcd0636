"""The audit page: who did what, when and why, from the change log.

It shows every action (requested, sent, succeeded, failed, retried), every flag change
a person or a token made (evaluation's own openings and resolutions are not audit
entries), every silence created, edited or ended, and every admin change (users,
sources and tokens, alert channels and routes, dead-letter replays); newest first, a
page at a time by keyset, in two queries a page.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_safe

from supervisor.core.actions.advice import ACTION_LABELS as ACTIONS
from supervisor.core.flags.kinds import kind_of
from supervisor.core.models import Change, Task
from supervisor.core.queries.pagination import CursorError, decode, encode

from .admin_views import ADMINISTER_PERMISSION
from .templatetags.readable import short_label

PAGE_SIZE = 50


class Part(NamedTuple):
    """A piece of an audit line: text or code, linked to `url`, with `hover` on hover."""

    form: str  # text | code
    text: str
    url: str | None = None
    hover: str = ""


# A flag change by someone names them; evaluation's own changes carry no actor.
_BY_SOMEONE = Q(payload__has_key="actor") & ~Q(payload__actor="")
CATEGORIES = {
    "actions": Q(kind__startswith="action."),
    "flags": Q(kind__startswith="flag.") & _BY_SOMEONE,
    "assignments": Q(kind__in=["task.assigned", "task.unassigned"]),
    "silences": Q(kind__startswith="silence."),
    "admin": Q(kind__startswith="user.")
    | Q(kind__startswith="source.")
    | Q(kind__startswith="channel.")
    | Q(kind__startswith="route.")
    | Q(kind__startswith="dead_letter.")
    | Q(kind__startswith="retention."),
}
CATEGORY_CHOICES = (
    ("", "everything"),
    ("actions", "actions"),
    ("flags", "flag changes"),
    ("assignments", "assignments"),
    ("silences", "silences"),
    ("admin", "admin changes"),
)

VERBS = {
    "flag.acknowledged": "Acknowledged",
    "flag.snoozed": "Snoozed",
    "flag.unacknowledged": "Took back the acknowledgement of",
    "flag.unsnoozed": "Ended the snooze of",
    "flag.resolved": "Resolved",
    "flag.opened": "Opened",
    "flag.updated": "Updated",
    "task.assigned": "Assigned",
    "task.unassigned": "Unassigned",
    "silence.created": "Created silence",
    "silence.edited": "Edited silence",
    "silence.ended": "Ended silence",
    "action.requested": "requested",
    "action.sending": "being sent",
    "action.succeeded": "succeeded",
    "action.failed": "failed",
    "action.retrying": "to be retried",
    "user.created": "Created user",
    "user.role": "Changed the role of",
    "source.created": "Created source",
    "source.revoked": "Revoked the token of source",
    "source.token_rotated": "Rotated the token of source",
    "source.connector": "Set the connector of source",
    "source.renamed": "Renamed source",
    "channel.created": "Created alert channel",
    "channel.edited": "Edited alert channel",
    "channel.enabled": "Enabled alert channel",
    "channel.disabled": "Disabled alert channel",
    "route.created": "Created alert route",
    "route.edited": "Edited alert route",
    "dead_letter.replayed": "Replayed dead letter",
    "dead_letter.replay_failed": "Could not replay dead letter",
    "retention.pruned": "Pruned what was past its retention:",
}


def _wants_partial(request) -> bool:
    # A history restore asks for the whole page even though it comes from htmx.
    return bool(
        request.headers.get("HX-Request") and not request.headers.get("HX-History-Restore-Request")
    )


def audit_changes(category: str = "", actor: str = "", cursor: str | None = None):
    """The page's change rows (one more than a page, to know if there is another)."""
    changes = Change.objects.filter(CATEGORIES.get(category) or _everything())
    if actor:
        changes = changes.filter(payload__actor=actor)
    if cursor:
        try:
            (last,) = decode(cursor, (int,))
        except CursorError:
            last = None
        if last is not None:
            changes = changes.filter(pk__lt=last)
    return list(changes.order_by("-pk")[: PAGE_SIZE + 1])


def one_row_per_action(changes: list[Change]) -> list[tuple[Change, list[str], dict]]:
    """The page's changes, newest first, each action on one row, its newest change's:
    requested, sending and succeeded were three rows for one action. A row carries the
    states its action went through on this page, oldest first, and what its steps said
    (the request's reason, a failure's error; the newest word wins)."""
    steps: dict[int, list[str]] = {}
    said: dict[int, dict] = {}
    for change in reversed(changes):  # oldest first
        action = _action_id(change)
        if action is not None:
            steps.setdefault(action, []).append(change.kind.split(".", 1)[1])
            said.setdefault(action, {}).update({k: v for k, v in change.payload.items() if v})
    rows, seen = [], set()
    for change in changes:
        action = _action_id(change)
        if action is None:
            rows.append((change, [], change.payload if isinstance(change.payload, dict) else {}))
        elif action not in seen:
            seen.add(action)
            rows.append((change, steps[action], said[action]))
    return rows


def _action_id(change: Change) -> int | None:
    payload = change.payload if isinstance(change.payload, dict) else {}
    action = payload.get("action") if change.kind.startswith("action.") else None
    return action if isinstance(action, int) else None


def _everything() -> Q:
    query = Q(pk__in=[])
    for category in CATEGORIES.values():
        query |= category
    return query


def _tasks(changes: list[Change]) -> dict[tuple[int, str], tuple[int, str]]:
    """(namespace, task id) -> the task page's pk and the task's label (its title, else
    its short id), for the page's task subjects at once."""
    wanted = {(c.namespace_id, c.subject_id) for c in changes if c.subject_type == "task"}
    if not wanted:
        return {}
    query = Q(pk__in=[])
    for namespace_id, task_id in wanted:
        query |= Q(namespace_id=namespace_id, task_id=task_id)
    return {
        (ns, task_id): (pk, (title or "").strip()[:80] or short_label(task_id))
        for pk, ns, task_id, title in Task.objects.filter(query, known=True).values_list(
            "pk", "namespace_id", "task_id", "title"
        )
    }


def entry(
    change: Change, tasks: dict, can_administer: bool, steps: list[str] = (), said: dict = None
) -> dict:
    """One audit line: who, when, what (as parts: text, code, links) and why; `said` is
    what an action's steps said together (one_row_per_action)."""
    payload = change.payload if isinstance(change.payload, dict) else {}
    payload = said or payload
    verb = VERBS.get(change.kind, change.kind)
    family = change.kind.split(".")[0]
    what: list[Part] = []

    def subject(url: str | None = None, label: str | None = None):
        if label is None:
            what.append(Part("code", change.subject_id, url))
        else:  # a task by its title or short id; its whole id on hover
            what.append(Part("text", label, url, change.subject_id))

    if family == "flag":
        what += [Part("text", f"{verb} flag", None), _kind(payload.get("kind"))]
        what.append(Part("text", f"on {change.subject_type}", None))
        subject(*_task(change, tasks))
    elif family == "silence":
        what.append(Part("text", verb, None))
        url = None
        if change.subject_id.isdigit():
            url = reverse("web:silence", args=[int(change.subject_id)])
        what.append(Part("code", f"#{change.subject_id}", url))
        if payload.get("matchers"):
            what.append(Part("text", f"on {payload['matchers']}", None))
        if payload.get("changed"):
            what.append(Part("text", f"changed: {', '.join(payload['changed'])}", None))
    elif family == "action":
        kind = payload.get("kind", "?")
        what += [Part("text", "Action", None), Part("text", ACTIONS.get(kind, kind), None, kind)]
        what.append(Part("text", "on task", None))
        subject(*_task(change, tasks))
        what.append(Part("text", _path(steps, verb), None))
    elif change.kind in ("task.assigned", "task.unassigned"):
        what += [Part("text", f"{verb} task", None)]
        subject(*_task(change, tasks))
        if payload.get("assignee"):
            what.append(Part("text", f"to {payload['assignee']}", None))
        if payload.get("previous"):
            what.append(Part("text", f"(was {payload['previous']})", None))
    elif family == "user":
        what.append(Part("text", verb, None))
        subject(reverse("web:admin-users") if can_administer else None)
        if change.kind == "user.role":
            what.append(Part("text", f"to {payload.get('role')}", None))
            if payload.get("previous"):
                what.append(Part("text", f"(was {payload['previous']})", None))
        elif payload.get("role"):
            what.append(Part("text", f"with the {payload['role']} role", None))
    elif family == "source":
        what.append(Part("text", verb, None))
        subject(reverse("web:admin-sources") if can_administer else None)
        if change.kind == "source.connector":
            what.append(Part("text", f"to {payload.get('connector') or 'none'}", None))
        elif change.kind == "source.renamed":
            what.append(
                Part("text", f"(was {payload.get('previous', '?')}: {payload.get('why')})", None)
            )
        elif change.kind == "source.created":
            what.append(Part("text", f"with scopes {payload.get('scopes', '?')}", None))
    elif family == "channel":
        what.append(Part("text", verb, None))
        subject()
        if payload.get("target"):
            what.append(Part("text", f"({payload['target']})", None))
        if payload.get("previous"):
            what.append(Part("text", f"(was {payload['previous']})", None))
        if payload.get("changed"):
            what.append(Part("text", f"changed: {', '.join(payload['changed'])}", None))
    elif family == "route":
        what.append(Part("text", verb, None))
        subject()
        if payload.get("changed"):
            what.append(Part("text", f"changed: {', '.join(payload['changed'])}", None))
        if change.kind == "route.created" or "enabled" in (payload.get("changed") or ()):
            what.append(Part("text", "enabled" if payload.get("enabled") else "disabled", None))
    elif family == "dead_letter":
        what.append(Part("text", verb, None))
        url = None
        if can_administer and change.subject_id.isdigit():
            url = reverse("web:admin-dead-letter", args=[int(change.subject_id)])
        what.append(Part("code", f"#{change.subject_id}", url))
        if payload.get("event"):
            what.append(Part("text", f"(event {payload['event']})", None))
    else:
        what.append(Part("text", verb, None))
        subject()
    why = [
        (label, str(payload[key]))
        for key, label in (("reason", "reason"), ("error", "error"), ("until", "until"))
        if payload.get(key)
    ]
    return {
        "change": change,
        "actor": payload.get("actor") or "",
        "what": what,
        "why": why,
    }


def _task(change: Change, tasks: dict) -> tuple[str | None, str | None]:
    """The link to a change's task and its label; neither for a task not (or no longer)
    known, which is named by its id."""
    found = tasks.get((change.namespace_id, change.subject_id))
    if found is None:
        return None, None
    pk, label = found
    return reverse("web:task-detail", args=[pk]), label


def _kind(kind: str | None) -> Part:
    """A flag kind in words, its code on hover."""
    if not kind:
        return Part("code", "?")
    return Part("text", kind_of(kind).title, None, f"flag kind: {kind}")


def _path(steps: list[str], verb: str) -> str:
    """An action's steps on one row: "requested → being sent → succeeded"."""
    if not steps:
        return verb
    return " → ".join(VERBS.get(f"action.{step}", step) for step in steps)


@login_required
@require_safe
def audit(request):
    category = request.GET.get("kind", "")
    if category not in CATEGORIES:
        category = ""
    actor = (request.GET.get("actor") or "").strip()
    cursor = request.GET.get("cursor")
    page = audit_changes(category, actor, cursor)
    more = len(page) > PAGE_SIZE
    page = page[:PAGE_SIZE]
    tasks = _tasks(page)
    can_administer = request.user.has_perm(ADMINISTER_PERMISSION)
    active = {k: v for k, v in (("kind", category), ("actor", actor)) if v}
    context = {
        "nav": "audit",
        "entries": [
            entry(change, tasks, can_administer, steps, said)
            for change, steps, said in one_row_per_action(page)
        ],
        "filters": {"kind": category, "actor": actor},
        "categories": CATEGORY_CHOICES,
        "filtered": bool(active),
        "paged": bool(cursor),
        "next_query": urlencode({**active, "cursor": encode(page[-1].pk)}) if more else None,
    }
    template = "web/audit.html#rows" if _wants_partial(request) else "web/audit.html"
    response = render(request, template, context)
    patch_vary_headers(response, ("HX-Request",))
    return response
