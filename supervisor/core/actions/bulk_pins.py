"""What a bulk confirmation carries of its preview: the preview's id and, for each task
it showed, what it would get (its preview's digest: text, target thread, run,
connector), signed.

The server recomputes every preview at confirm time and compares: a task added or
gone, or one that would now send another text (or to another target, run or connector,
or send at all where the preview refused) is named, and nothing is done. A task now
refused sends nothing: it is refused with the others' outcome, as a resent confirmation
is. A client cannot make a pin: only a preview gives one.

A pin is signed, not encrypted: anyone holding it can read it. So it names tasks by a
keyed tag, not by their database ids, and carries keyed digests only (actions'
`keyed_digest`): a token shown no text cannot test a guess of one against it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core import signing

from supervisor.core.actions.previews import keyed_digest
from supervisor.core.models import Task

SALT = "supervisor.bulk-actions"


class NotAPin(ValueError):
    """The value is not a pin a preview of this server gave."""


@dataclass(frozen=True)
class Pin:
    kind: str
    id: str  # the bulk preview's id, which each of its previews shares
    tasks: dict[str, list]  # a task's tag -> what it was shown to get


def _tag(preview_id: str, task_pk: int) -> str:
    return keyed_digest(preview_id, "task", task_pk)[:16]


def _shown(preview) -> list:
    # 16 hex of the digest are enough to tell a change; the text's own keyed digest
    # says whether the text is what changed.
    digest = preview.digest.partition(".")[2]
    return [digest[:16], keyed_digest(preview.id, "text", preview.text)[:8], preview.allowed]


def pin(kind: str, previews: list, preview_id: str) -> str:
    """The signed pin of a bulk preview of `kind` over `previews` (one per task, each
    shown under `preview_id`)."""
    shown = {
        _tag(preview_id, p.task.pk): _shown(p) for p in sorted(previews, key=lambda p: p.task.pk)
    }
    return signing.Signer(salt=SALT).sign_object(
        {"kind": kind, "id": preview_id, "tasks": shown}, compress=True
    )


def read_pin(value: str, kind: str) -> Pin:
    """The pin `value` holds; NotAPin when it is no preview's pin, or one of another
    action."""
    try:
        pinned = signing.Signer(salt=SALT).unsign_object(value)
    except signing.BadSignature:
        raise NotAPin("'selection' is not one a preview gave: preview again") from None
    if pinned.get("kind") != kind:
        raise NotAPin(f"'selection' is from a preview of {pinned.get('kind')!r}, not {kind!r}")
    if "id" not in pinned:  # a pin of before preview ids, which named tasks by their pks
        raise NotAPin("'selection' is from an older version of Supervisor: preview again")
    return Pin(kind=kind, id=pinned["id"], tasks=pinned["tasks"])


def changes_since(
    pinned: Pin, previews: list, *, asked: set[int] = frozenset()
) -> tuple[list[tuple[Task, str]], int]:
    """([(task, what changed)], how many pinned tasks no longer match) between the
    pinned preview and `previews` (now, shown under the pin's id); nothing when the
    confirmation is of what would be done now. Tasks in `asked` (pks: the confirmation
    asked for them before) are not compared: what they get was asked already."""
    then = pinned.tasks
    changes = []
    for preview in previews:
        if preview.task.pk in asked:
            continue
        was = then.get(_tag(pinned.id, preview.task.pk))
        if was is None:
            changes.append((preview.task, "new since the preview"))
        elif not preview.allowed:
            continue  # sends nothing: refused and reported with the others' outcome
        elif was != _shown(preview):
            changes.append((preview.task, _what_changed(was, _shown(preview))))
    now = {_tag(pinned.id, pk) for pk in asked | {p.task.pk for p in previews}}
    return changes, sum(1 for tag in then if tag not in now)


def _what_changed(was: list, now: list) -> str:
    if not was[2]:
        return "refused in the preview, now allowed: what it would get was not shown"
    if was[1] != now[1]:
        return "its text"
    return "its target thread, run or connector"
