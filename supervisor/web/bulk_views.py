"""One action on many tasks from the list: the selected ones, or every task matching
the list's filters. A preview shows the count and what each task would get; the
confirmation carries the preview's id and the exact tasks it showed (a keyed digest),
and nothing is done if they changed meanwhile: the new preview is shown instead (409).
The same confirmation submitted again, or many times at once, asks once."""

from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from supervisor.core import clock
from supervisor.core.actions.advice import ACTION_LABELS
from supervisor.core.actions.idempotency import bulk_asked_before
from supervisor.core.actions.previews import (
    KINDS,
    new_preview_id,
    preview_action,
    preview_id_of,
    selection_digest,
)
from supervisor.core.actions.writers import BULK_LIMIT, do_request_bulk
from supervisor.core.flags.bulk import (
    DONE_WORDS,
    FLAG_ACTION_LABELS,
    FLAG_VERBS,
    do_bulk_flag_action,
    kind_counts,
    open_flags_of,
    opened_since,
)
from supervisor.core.flags.kinds import titles
from supervisor.core.flags.writers import FlagActionError

from .pages import task_list
from .snooze_times import SNOOZE_CHOICES
from .views import can_act

PREVIEW_ROWS = 100
TEXT_ROWS = 20  # tasks whose exact text the bulk preview shows in full
REPORTED_TASKS = 10  # tasks named one by one in the messages after a bulk action
PREVIEW_SALT = "supervisor.bulk-flags"


def _targets(params, user) -> tuple[list, str | None]:
    """(tasks, error): the selected tasks, or every task matching the filters (whose
    "assigned to me" means `user`)."""
    if params.get("scope") == "matching":
        filters = task_list.list_filters(params)
        if not any(filters.values()):
            return [], "choose a filter first: bulk actions on every task are not allowed"
        tasks = task_list.filtered_tasks(filters, user)
    else:
        pks = [int(pk) for pk in params.getlist("task") if pk.isdigit()]
        if not pks:
            return [], "select at least one task (or choose “every task matching the filters”)"
        tasks = task_list.known_tasks().filter(pk__in=pks)
    tasks = list(tasks.order_by("-delegated_at", "-pk")[: BULK_LIMIT + 1])
    if len(tasks) > BULK_LIMIT:
        return [], f"more than {BULK_LIMIT} tasks match: narrow the filters"
    return tasks, None


def _back_to_list(params):
    """Back to the list the operator came from: its filters, as far as its form can show
    them (a post naming flags by id once landed on `?flag=14`, a kind no task has)."""
    query = urlencode(task_list.form_filters(params))
    return redirect(reverse("web:task-list") + (f"?{query}" if query else ""))


@login_required
@require_http_methods(["GET", "POST"])
def bulk_action(request):
    if not can_act(request.user):
        raise PermissionDenied("your account may look but not act")
    params = request.POST if request.method == "POST" else request.GET
    kind = params.get("kind")
    if kind in FLAG_VERBS:
        return _flag_action(request, params, kind)
    if kind not in KINDS:
        messages.error(request, f"Choose an action: {', '.join(KINDS + FLAG_VERBS)}.")
        return _back_to_list(params)
    tasks, error = _targets(params, request.user)
    if error:
        messages.error(request, f"Could not prepare the bulk action: {error}.")
        return _back_to_list(params)
    if request.method == "POST":
        return _confirm(request, params, kind, tasks)
    return _show_preview(request, params, kind, tasks)


def _show_preview(request, params, kind: str, tasks: list, *, changed: bool = False):
    preview_id = new_preview_id()  # its confirmation is one request, however often sent
    rows = [
        {
            "task": t,
            "preview": preview_action(t, kind, preview_id=preview_id),
            "show_text": i < TEXT_ROWS,
        }
        for i, t in enumerate(tasks[:PREVIEW_ROWS])
    ]
    texts = [r for r in rows if r["preview"].allowed and r["preview"].text]
    return render(
        request,
        "web/bulk_preview.html",
        {
            "kind": kind,
            "label": ACTION_LABELS[kind],
            "count": len(tasks),
            "rows": rows,
            "more": max(0, len(tasks) - PREVIEW_ROWS),
            "allowed": sum(1 for r in rows if r["preview"].allowed),
            # The texts shown are the texts sent: each carries its preview's digest.
            "shown_texts": [r for r in texts if r["show_text"]],
            "texts_not_shown": len(texts) - len([r for r in texts if r["show_text"]]),
            "scope": params.get("scope") or "selected",
            "pks": [t.pk for t in tasks],
            "selection": selection_digest(kind, tasks, preview_id),
            "changed": changed,
            "filters": {k: params.get(k) for k in task_list.LIST_FILTERS if params.get(k)},
            "back": urlencode(task_list.form_filters(params)),  # the list's query
        },
        status=409 if changed else 200,
    )


def _confirm(request, params, kind: str, tasks: list):
    selection = params.get("selection") or ""
    preview_id = preview_id_of(selection)
    if preview_id is None or selection != selection_digest(kind, tasks, preview_id):
        earlier = bulk_asked_before(kind, preview_id=preview_id)
        if earlier:
            # This confirmation was made before (its tasks may match no longer because
            # of it): it is the same request, and asks for nothing new.
            messages.info(
                request,
                f"Already asked: this preview was confirmed before ({len(earlier)} "
                f"action{'s' if len(earlier) != 1 else ''}); nothing new was asked.",
            )
            return _back_to_list(params)
        return _show_preview(request, params, kind, tasks, changed=True)
    outcome = do_request_bulk(
        tasks,
        kind,
        actor=f"user:{request.user.get_username()}",
        user=request.user,
        reason=params.get("reason") or None,
        previewed={
            t.pk: params[f"previewed-{t.pk}"] for t in tasks if f"previewed-{t.pk}" in params
        },
        preview_id=preview_id,
    )
    messages.success(
        request, f"Queued {len(outcome.created)} of {len(tasks)} ({ACTION_LABELS[kind]})."
    )
    if outcome.already:
        messages.info(
            request,
            f"{len(outcome.already)} already asked by this confirmation, sent before: "
            "not asked again.",
        )
    for task, why in outcome.refused[:10]:
        messages.warning(request, f"{task.title or task.task_id}: {why}.")
    if len(outcome.refused) > 10:
        messages.warning(request, f"…and {len(outcome.refused) - 10} more refused.")
    return _back_to_list(params)


# --- acknowledge, snooze, resolve the open flags of many tasks ---------------------


def _flag_action(request, params, verb: str):
    if request.method == "POST":
        return _confirm_flags(request, params, verb)
    tasks, error = _targets(params, request.user)
    if error:
        messages.error(request, f"Could not prepare the bulk action: {error}.")
        return _back_to_list(params)
    return _show_flag_preview(request, params, verb, tasks)


def _show_flag_preview(request, params, verb: str, tasks: list, *, problem: str = ""):
    """The open flags each task has, which the confirmation will act on (those, and not
    flags opened after this preview). The list's flag filter narrows them to its kind."""
    only_kind = (params.get("flag") or "").strip() or None
    flags = open_flags_of(tasks, only_kind)
    by_task: dict[int, list] = {}
    for flag in flags:
        by_task.setdefault(flag.task_id, []).append(flag)
    rows = [{"task": t, "flags": by_task.get(t.pk, [])} for t in tasks[:PREVIEW_ROWS]]
    return render(
        request,
        "web/bulk_flags_preview.html",
        {
            "verb": verb,
            "done_word": DONE_WORDS[verb],
            "label": FLAG_ACTION_LABELS[verb],
            "count": len(tasks),
            "flag_count": len(flags),
            "task_count": len(by_task),
            "without": len(tasks) - len(by_task),
            "pks": [t.pk for t in tasks],
            "kinds": kind_counts(flags),
            "acknowledged": sum(1 for f in flags if f.acknowledged_at is not None),
            "only_kind": only_kind,
            "rows": rows,
            "more": max(0, len(tasks) - PREVIEW_ROWS),
            "scope": params.get("scope") or "selected",
            # When, and which flags: the confirmation acts on these and no other.
            "previewed": signing.dumps(
                {"verb": verb, "at": clock.now().isoformat(), "flags": [f.pk for f in flags]},
                salt=PREVIEW_SALT,
                compress=True,
            ),
            "snooze_choices": SNOOZE_CHOICES,
            "chosen_for": params.get("for") or SNOOZE_CHOICES[0][0],
            "reason": params.get("reason") or "",
            "problem": problem,
            "filters": {k: params.get(k) for k in task_list.LIST_FILTERS if params.get(k)},
            "back": urlencode(task_list.form_filters(params)),  # the list's query
        },
        status=400 if problem else 200,
    )


def _previewed(params, verb: str) -> tuple[datetime, list[int]] | None:
    """When the confirmed preview of `verb` was shown and the flags it showed, signed: a
    snooze runs from then, so the same confirmation sent twice asks for the same 'until'
    and acts once; and only those flags are acted on, whatever else the post names."""
    try:
        shown = signing.loads(params.get("previewed", ""), salt=PREVIEW_SALT)
        if shown["verb"] != verb:
            return None
        return datetime.fromisoformat(shown["at"]), [int(pk) for pk in shown["flags"]]
    except (signing.BadSignature, ValueError, TypeError, KeyError):
        return None


def _confirm_flags(request, params, verb: str):
    now = clock.now()
    until, reason = None, (params.get("reason") or "").strip()
    problem = ""
    previewed, flag_pks = _previewed(params, verb) or (None, [])
    if previewed is None:
        problem = "the confirmation does not come from a preview: read this one and confirm"
    elif verb == "snooze":
        hours = {key: h for key, _, h in SNOOZE_CHOICES}.get(params.get("for"))
        until = previewed + timedelta(hours=hours) if hours is not None else None
        if hours is None:
            problem = "choose how long to snooze"
        elif until <= now:
            problem = "the preview is older than the snooze it asks for: confirm this one"
    elif verb == "resolve" and not reason:
        problem = "a reason is needed to resolve flags by hand"
    if problem:
        tasks, error = _targets(params, request.user)
        if error:
            messages.error(request, f"Could not prepare the bulk action: {error}.")
            return _back_to_list(params)
        return _show_flag_preview(request, params, verb, tasks, problem=problem)
    actor = f"user:{request.user.get_username()}"
    try:
        outcomes = do_bulk_flag_action(
            verb, flag_pks, now, by=request.user, actor=actor, until=until, reason=reason
        )
    except FlagActionError as exc:  # checked above; kept for a rule added to the core
        messages.error(request, f"Could not {verb} the flags: {exc}.")
        return _back_to_list(params)
    _report_flags(request, verb, outcomes)
    newer = opened_since(previewed, [o.task.pk for o in outcomes], params.get("flag") or None)
    if newer:
        kinds = sorted({k for ks in newer.values() for k in ks})
        messages.warning(
            request,
            f"{sum(map(len, newer.values()))} flag(s) opened on these tasks after the "
            f"preview were left alone ({', '.join(kinds)}): preview again to include them.",
        )
    return _back_to_list(params)


def _report_flags(request, verb: str, outcomes: list) -> None:
    word = DONE_WORDS[verb]
    done = sum(len(o.done) for o in outcomes)
    already = sum(len(o.already) for o in outcomes)
    refused = sum(len(o.refused) for o in outcomes)
    summary = f"{word.capitalize()} {done} flag{'s' if done != 1 else ''} on {len(outcomes)} task"
    summary += "s" if len(outcomes) != 1 else ""
    if already:
        summary += f"; {already} already {word}"
    if refused:
        summary += f"; {refused} left as they were"
    messages.success(request, summary + ".")
    for outcome in outcomes[:REPORTED_TASKS]:
        parts = []
        if outcome.done:
            parts.append(f"{word} {titles(outcome.done)}")
        if outcome.already:
            parts.append(f"already {word}: {titles(outcome.already)}")
        for kind, why in outcome.refused:
            parts.append(f"{titles([kind])} not {word}: {why}")
        level = messages.warning if outcome.refused else messages.info
        level(request, f"{outcome.task.title or outcome.task.task_id}: {'; '.join(parts)}.")
    if len(outcomes) > REPORTED_TASKS:
        messages.info(request, f"…and {len(outcomes) - REPORTED_TASKS} more tasks.")
