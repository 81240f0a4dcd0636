"""Who looks after a task's problem (Sentry's assignee): the only writers of
`Task.assignee`, each appending a change row in the same transaction, so the audit page
lists it and live pages show it.

The domain's "owned" is about runs (ownership.py); a person who looks after a problem is
its assignee. Only operators are assigned: a viewer can act on nothing.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q

from supervisor.core import changes
from supervisor.core.access.roles import actor_name
from supervisor.core.changes import ChangeKind
from supervisor.core.models import Task

ACT_PERMISSION = "act"


class AssignError(ValueError):
    """An assignment that cannot apply (a user who may not act, an unknown task)."""


def assignable_users():
    """Active users who may act (an operator's or admin's role, or a superuser), by name:
    whom a problem can be given to."""
    User = get_user_model()
    may_act = Q(
        groups__permissions__codename=ACT_PERMISSION,
        groups__permissions__content_type__app_label="core",
    ) | Q(
        user_permissions__codename=ACT_PERMISSION,
        user_permissions__content_type__app_label="core",
    )
    field = User.USERNAME_FIELD
    return (
        User.objects.filter(may_act | Q(is_superuser=True), is_active=True)
        .distinct()
        .order_by(field)
    )


def _subject(task: Task) -> changes.Subject:
    return changes.Subject("task", task.task_id, task.namespace_id)


def _name(user_pk: int | None) -> str | None:
    # Read apart from the locked row: PostgreSQL locks no row of an outer join's null side.
    if user_pk is None:
        return None
    User = get_user_model()
    return User.objects.filter(pk=user_pk).values_list(User.USERNAME_FIELD, flat=True).first()


def do_assign_task(task: Task, assignee, now: datetime, *, by=None) -> bool:
    """Give the task's problem to `assignee`; True when that changed anything. Assigning
    the user it already has writes nothing (a resend, a second tab)."""
    if not assignable_users().filter(pk=assignee.pk).exists():
        raise AssignError(f"{assignee.get_username()} may not act, so cannot be assigned")
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=task.pk)
        if task.assignee_id == assignee.pk:
            return False
        previous = _name(task.assignee_id)
        task.assignee, task.assigned_at = assignee, now
        task.save(update_fields=["assignee", "assigned_at"])
        details = {"assignee": assignee.get_username()}
        if previous:
            details["previous"] = previous
        changes.record(ChangeKind.TASK_ASSIGNED, _subject(task), actor=actor_name(by), **details)
    return True


def do_unassign_task(task: Task, *, by=None) -> bool:
    """Take the task's assignee away; True when it had one (a resend writes nothing)."""
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=task.pk)
        if task.assignee_id is None:
            return False
        previous = _name(task.assignee_id)
        task.assignee, task.assigned_at = None, None
        task.save(update_fields=["assignee", "assigned_at"])
        changes.record(
            ChangeKind.TASK_UNASSIGNED, _subject(task), actor=actor_name(by), previous=previous
        )
    return True
