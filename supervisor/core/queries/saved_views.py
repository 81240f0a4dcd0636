"""Saved views: named task-list filters, private to their owner or shared with everyone.

The writers here keep names unique per owner and let only the owner change a view; the
filter itself is checked by the page that saves it, through the list's own filter
parsing (web/saved_views.py), since core knows nothing of the list's form. A view is
a person's bookmark, not an act on tasks: it is not in the change log (no live page
shows it, and the audit is of what was done to tasks, flags and settings).
"""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Q

from supervisor.core.models import SavedView

NAME_LENGTH = SavedView._meta.get_field("name").max_length


class SavedViewError(ValueError):
    """A saved view that cannot be written (no name, a name taken, not the owner's)."""


def visible_views(user):
    """The views `user` sees: their own and everyone's shared ones, by name."""
    return (
        SavedView.objects.filter(Q(owner=user) | Q(shared=True))
        .select_related("owner")
        .order_by("name", "pk")
    )


def _name(name: str) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise SavedViewError("a saved view needs a name")
    if len(name) > NAME_LENGTH:
        raise SavedViewError(f"a name has at most {NAME_LENGTH} characters")
    return name


def do_save_view(owner, name: str, query: str, shared: bool, now: datetime) -> SavedView:
    """Save a view under `name`. Saving the same view again (a resend) changes nothing;
    another view under a name the owner uses already is refused, not overwritten."""
    name = _name(name)
    with transaction.atomic():
        found = SavedView.objects.select_for_update().filter(owner=owner, name=name).first()
        if found is not None:
            if found.query == query and found.shared == shared:
                return found
            raise SavedViewError(f"you have a view named “{name}” already; rename or delete it")
        try:
            with transaction.atomic():
                return SavedView.objects.create(
                    owner=owner,
                    name=name,
                    query=query,
                    shared=shared,
                    created_at=now,
                    updated_at=now,
                )
        except IntegrityError:  # saved by another request in between
            raise SavedViewError(f"you have a view named “{name}” already") from None


def _own(view: SavedView, user) -> SavedView:
    if view.owner_id != user.pk:
        raise SavedViewError("only its owner can change a saved view")
    return view


def do_edit_view(view: SavedView, user, name: str, shared: bool, now: datetime) -> bool:
    """Rename a view or change whom it is shared with; True when anything changed."""
    _own(view, user)
    name = _name(name)
    if view.name == name and view.shared == shared:
        return False
    if SavedView.objects.filter(owner=user, name=name).exclude(pk=view.pk).exists():
        raise SavedViewError(f"you have a view named “{name}” already")
    try:
        with transaction.atomic():
            SavedView.objects.filter(pk=view.pk).update(name=name, shared=shared, updated_at=now)
    except IntegrityError:
        raise SavedViewError(f"you have a view named “{name}” already") from None
    view.name, view.shared, view.updated_at = name, shared, now
    return True


def do_delete_view(view: SavedView, user) -> bool:
    """Delete a view; False when it was gone already (a resend)."""
    _own(view, user)
    deleted, _ = SavedView.objects.filter(pk=view.pk).delete()
    return bool(deleted)
