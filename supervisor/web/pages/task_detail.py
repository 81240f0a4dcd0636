"""The task page: what the parent was given beside the latest result, the task's problem
with its flags, the advice (core.actions.advice: the same suggestions the API gives), the
newest action's banner, and one page of the timeline."""

from __future__ import annotations

from bisect import bisect_left
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model

from supervisor.core import clock
from supervisor.core.actions.advice import ACTION_LABELS, advise
from supervisor.core.facts import ownership
from supervisor.core.facts.loader import load_for_task
from supervisor.core.facts.task_detail import describe_task, timeline, timeline_key
from supervisor.core.flags.kinds import CANCEL, CONTINUE, DELIVER
from supervisor.core.models import Action, Flag, Task
from supervisor.core.queries.pagination import CursorError, decode, encode
from supervisor.core.triage import silences
from supervisor.core.triage.assignment import assignable_users

from ..problems import problem_of
from ..snooze_times import SNOOZE_CHOICES
from ..word_diff import word_diff
from .flag_cards import flag_entry

TIMELINE_PAGE = 60  # the task page's timeline entries shown at once (twenty runs' worth)


def _handed(reading) -> list[dict]:
    """The "given" panel's entries, from the one reading (core.handover): what reached the
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
    # The actions and flags before the facts: a frame rendered while an action's outcome
    # commits then never shows the outcome beside results from before it (a delivery
    # "succeeded" above a latest result that "has not reached the parent").
    actions = list(task.actions.order_by("created_at", "pk"))
    flags = list(task.flags.select_related("resolved_by").order_by("state", "-opened_at", "-pk"))
    open_flags = [f for f in flags if f.state == Flag.OPEN]
    snap = load_for_task(task)
    detail = describe_task(task, snap)
    view = snap.tasks[task.task_id]
    advice = advise(task, snap, view, open_flags, actions)
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
    suggested = advice.suggestions
    headline = problem.headline.words.action if problem else None
    # The problem's own advice, when the action it names cannot be sent now.
    headline_unfit = next((s for s in suggested if s.kind == headline and s.unfit), None)
    # ... and, when it can, the action itself: one Tab after the problem, not past its forms.
    headline_ready = next(
        (s for s in suggested if s.kind == headline and not s.unfit and not s.status), None
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
        "continued": advice.continued,
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
