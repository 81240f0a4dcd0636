"""One request, however often it is sent: idempotency keys (checked, and the ids made
from them), and the action that the same key, the same preview confirmed or the same
bulk request's key asked for before."""

from __future__ import annotations

import hashlib

from django.db.models import Q

from supervisor.core.actions.previews import ActionRefused
from supervisor.core.models import Action, Task

KEY_LIMIT = 200  # characters of an idempotency key (Action.idempotency_key)
EVENT_ID_LIMIT = 200  # characters of an event id (contract §2)


def check_key(key: str) -> None:
    """An idempotency key is 1 to 200 printable ASCII characters (as the IETF draft of
    the Idempotency-Key header has it): it is stored, and sent on in headers and ids.
    ActionRefused(400) names what is wrong with one that is not."""
    if not 1 <= len(key) <= KEY_LIMIT:
        raise ActionRefused(400, f"Idempotency-Key must be 1 to {KEY_LIMIT} characters")
    for char in key:
        if not " " <= char <= "~":
            raise ActionRefused(
                400,
                f"Idempotency-Key holds U+{ord(char):04X}; use printable ASCII characters only",
            )
    if key != key.strip(" "):
        # HTTP drops a header value's outer spaces: sent on, the key would not be this one.
        raise ActionRefused(400, "Idempotency-Key must not start or end with a space")


def key_id(prefix: str, key: str, limit: int = EVENT_ID_LIMIT) -> str:
    """An id made from an idempotency key, at most `limit` characters: the key itself
    when it fits, else its SHA-256 (as unique, and the same for the same key)."""
    if len(prefix) + len(key) <= limit:
        return prefix + key
    return f"{prefix}sha256:{hashlib.sha256(key.encode()).hexdigest()}"


def bulk_asked_before(
    kind: str, *, preview_id: str | None, bulk_key: str | None = None, namespace=None
) -> list[Action]:
    """The actions a bulk confirmation of this preview, or a bulk request with this key,
    asked for before (in the namespace named `namespace` when given: a token's).
    ActionRefused(409) when the key asked for another action (a preview's id is bound
    to its action by its digest)."""
    if not (preview_id or bulk_key):
        return []
    found = Action.objects.filter(
        (Q(confirms=preview_id) if preview_id else Q())
        | (Q(bulk_key=bulk_key) if bulk_key else Q())
    )
    if namespace is not None:
        found = found.filter(namespace__name=namespace)
    earlier = list(found.select_related("task__namespace").order_by("pk"))
    if bulk_key and any(a.bulk_key == bulk_key and a.kind != kind for a in earlier):
        raise ActionRefused(409, KEY_REUSED)
    return [action for action in earlier if action.kind == kind]


def asked_before(
    task: Task, kind: str, *, key: str | None, preview_id: str | None, bulk_key: str | None
) -> Action | None:
    """The action the same request asked for before: by its idempotency key (the
    namespace's), by the preview it confirms, or by its bulk request's key."""
    if key and (existing := _action_with_key(task, key)) is not None:
        return _same_request(existing, task, kind)
    for field_name, value, refusal in (
        ("confirms", preview_id, PREVIEW_REUSED),
        ("bulk_key", bulk_key, KEY_REUSED),
    ):
        if value:
            existing = Action.objects.filter(task=task, **{field_name: value}).first()
            if existing is not None:
                return _same_request(existing, task, kind, refusal)
    return None


def _action_with_key(task: Task, key: str) -> Action | None:
    """The action the key asked for in the task's namespace: keys are each namespace's."""
    found = Action.objects.filter(namespace_id=task.namespace_id, idempotency_key=key)
    return found.select_related("task").first()


KEY_REUSED = "this idempotency key was used for another action; use a new key"
PREVIEW_REUSED = "this preview was confirmed for another action; preview again"


def _same_request(existing: Action, task: Task, kind: str, refusal: str = KEY_REUSED) -> Action:
    if existing.task_id != task.pk or existing.kind != kind:
        raise ActionRefused(409, refusal)
    return existing
