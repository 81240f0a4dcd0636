"""Tell a user's open sockets, on commit, to re-read their session: when it may have
ended (log-out; the user saved: deactivated, password changed) or its role changed (the
user's groups or permissions).

Sent through the channel layer to the user's group. A process that shares no layer
with the web processes (a `manage.py` command with the in-memory layer) reaches none of
their sockets; those re-read their session before a frame anyway (session.RECHECK).
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model, user_logged_out
from django.db import transaction
from django.db.models.signals import m2m_changed, post_save

from . import groups
from .session import session_digest

log = logging.getLogger(__name__)


def connect() -> None:
    User = get_user_model()
    user_logged_out.connect(_logged_out, dispatch_uid="live.logged_out")
    post_save.connect(_user_saved, sender=User, dispatch_uid="live.user_saved")
    for through in (User.groups.through, User.user_permissions.through):
        m2m_changed.connect(
            _memberships_changed, sender=through, dispatch_uid=f"live.{through.__name__}"
        )


def ask_sockets_to_check(user_pks, ended_session: str | None = None) -> None:
    """On commit, ask every socket of these users to re-read its session; the sockets of
    `ended_session` (a session key) close at once instead."""
    message = {"type": "session.check", "check": uuid.uuid4().hex}
    if ended_session:
        message["ended"] = session_digest(ended_session)
    for user_pk in set(user_pks):
        transaction.on_commit(lambda pk=user_pk: _send(pk, message))


def _send(user_pk: int, message: dict) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        # Synchronous code inside a running event loop (Playwright's, in browser tests)
        # cannot wait for the layer; the sockets re-read their session before a frame.
        return
    try:
        async_to_sync(get_channel_layer().group_send)(groups.user(user_pk), message)
    except Exception as exc:  # the layer is down: the sockets re-read before a frame
        log.warning(
            "live: could not ask user %s's sockets to re-read their session: %s", user_pk, exc
        )


def _logged_out(sender, request, user, **kwargs):
    session = getattr(request, "session", None)
    if user is not None and session is not None:
        ask_sockets_to_check([user.pk], ended_session=session.session_key)


def _user_saved(sender, instance, created, update_fields=None, **kwargs):
    # A new user has no socket; a log-in writes last_login only.
    if created or (update_fields is not None and set(update_fields) == {"last_login"}):
        return
    ask_sockets_to_check([instance.pk])


def _memberships_changed(sender, instance, action, reverse, pk_set, **kwargs):
    User = get_user_model()
    if not reverse:
        if action in {"post_add", "post_remove", "post_clear"}:
            ask_sockets_to_check([instance.pk])
    elif action in {"post_add", "post_remove"}:
        ask_sockets_to_check(pk_set or ())
    elif action == "pre_clear":  # group.user_set.clear(): who is in it, before it empties
        user_field = f"{User._meta.model_name}_id"
        rows = sender.objects.filter(**{instance._meta.model_name: instance})
        ask_sockets_to_check(rows.values_list(user_field, flat=True))
