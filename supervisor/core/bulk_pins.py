"""What a bulk confirmation carries of its preview: the tasks it showed and, for each,
what it would get (its preview's digest: text, target thread, run, connector), signed.

The server recomputes every preview at confirm time and compares: a task added or
gone, or one that would now send another text (or to another target, run or connector,
or send at all where the preview refused) is named, and nothing is done. A task now
refused sends nothing: it is refused with the others' outcome, as a resent confirmation
is. A client cannot make a pin: only a preview gives one.
"""

from __future__ import annotations

import hashlib

from django.core import signing

from .models import Task

SALT = "supervisor.bulk-actions"


class NotAPin(ValueError):
    """The value is not a pin a preview of this server gave."""


def _text_hash(text: str | None) -> str:
    return hashlib.sha256((text or "").encode()).hexdigest()[:8]


def _shown(preview) -> list:
    # 16 hex of the digest are enough to tell a change; the text's own hash says
    # whether the text is what changed.
    return [preview.digest[:16], _text_hash(preview.text), preview.allowed]


def pin(kind: str, previews: list) -> str:
    """The signed pin of a bulk preview of `kind` over `previews` (one per task)."""
    shown = {str(p.task.pk): _shown(p) for p in sorted(previews, key=lambda p: p.task.pk)}
    # Without a timestamp: the same tasks showing the same gives the same pin.
    return signing.Signer(salt=SALT).sign_object({"kind": kind, "tasks": shown}, compress=True)


def changes_since(value: str, kind: str, previews: list) -> list[tuple[Task, str]]:
    """[(task, what changed)] between the pinned preview and `previews` (now); empty
    when the confirmation is of what would be done now. NotAPin when `value` is no
    preview's pin, or one of another action."""
    try:
        pinned = signing.Signer(salt=SALT).unsign_object(value)
    except signing.BadSignature:
        raise NotAPin("'selection' is not one a preview gave: preview again") from None
    if pinned.get("kind") != kind:
        raise NotAPin(f"'selection' is from a preview of {pinned.get('kind')!r}, not {kind!r}")
    then = pinned["tasks"]
    changes = []
    for preview in previews:
        was = then.get(str(preview.task.pk))
        if was is None:
            changes.append((preview.task, "new since the preview"))
        elif not preview.allowed:
            continue  # sends nothing: refused and reported with the others' outcome
        elif was != _shown(preview):
            changes.append((preview.task, _what_changed(was, _shown(preview))))
    now = {str(p.task.pk) for p in previews}
    gone = [int(pk) for pk in then if pk not in now]
    for task in Task.objects.filter(pk__in=gone).select_related("namespace").order_by("pk"):
        changes.append((task, "no longer matches"))
    return changes


def _what_changed(was: list, now: list) -> str:
    if not was[2]:
        return "refused in the preview, now allowed: what it would get was not shown"
    if was[1] != now[1]:
        return "its text"
    return "its target thread, run or connector"
