"""Three roles as Django groups: a viewer reads, an operator also acts, an admin also
manages sources, tokens, users and dead letters.

A user has at most one role group; `do_set_role` and `do_create_user` are the only
writers, and each appends a Change row for the audit page.
"""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q

from supervisor.core import changes
from supervisor.core.changes import ChangeKind

VIEWER, OPERATOR, ADMIN = "viewer", "operator", "admin"
# Role -> its permissions, least to most. Migration 0005_roles keeps a frozen copy.
ROLES: dict[str, tuple[str, ...]] = {
    VIEWER: (),
    OPERATOR: ("core.act",),
    ADMIN: ("core.act", "core.administer"),
}
ROLE_WORDS = {
    VIEWER: "reads everything, acts on nothing",
    OPERATOR: "also cancels, continues, delivers and acts on flags",
    ADMIN: "also manages sources, tokens, users and dead letters",
}


class RoleError(ValueError):
    """A role change that cannot apply (an unknown role, the last admin, a taken name)."""


def actor_name(by) -> str:
    """Who acted, as the audit names them: "user:NAME", or "system" for commands."""
    return f"user:{by.get_username()}" if by is not None else "system"


def role_of(user) -> str | None:
    """The user's role group (the strongest if several), or None. Reads `user.groups`
    through any prefetch, so a list of users costs one query for all their groups."""
    names = {group.name for group in user.groups.all()}
    for role in reversed(ROLES):
        if role in names:
            return role
    return None


def role_group(role: str) -> Group:
    """The group of `role`, made with its permissions if it is missing (0005_roles makes them)."""
    if role not in ROLES:
        raise RoleError(f"unknown role {role!r}; choose from {', '.join(ROLES)}")
    group, created = Group.objects.get_or_create(name=role)
    if created:
        group.permissions.set(_permissions(ROLES[role]))
    return group


def _permissions(names: tuple[str, ...]) -> list[Permission]:
    query = Q(pk__in=[])
    for name in names:
        app_label, codename = name.split(".")
        query |= Q(content_type__app_label=app_label, codename=codename)
    return list(Permission.objects.filter(query))


def _administers(exclude_pk: int):
    """Active users other than `exclude_pk` who may administer, whatever gives them the right."""
    administer = Q(content_type__app_label="core", codename="administer")
    perm = Permission.objects.filter(administer).first()
    who = Q(is_superuser=True)
    if perm is not None:
        who |= Q(groups__permissions=perm) | Q(user_permissions=perm)
    return get_user_model().objects.filter(who, is_active=True).exclude(pk=exclude_pk)


def _assign(user, role: str) -> str | None:
    group = role_group(role)
    previous = role_of(user)
    user.groups.remove(*Group.objects.filter(name__in=ROLES).exclude(pk=group.pk))
    user.groups.add(group)
    # Django caches permissions on the user object; the next check must see the new role.
    for cache in ("_perm_cache", "_group_perm_cache", "_user_perm_cache"):
        user.__dict__.pop(cache, None)
    return previous


def _subject(user) -> changes.Subject:
    return changes.Subject("user", user.get_username())


@transaction.atomic
def do_set_role(user, role: str, by=None) -> str | None:
    """Give `user` the role (and no other); returns the role it had. Refuses to take the
    admin role from the last user who may administer: someone must be able to undo it."""
    if role not in ROLES:
        raise RoleError(f"unknown role {role!r}; choose from {', '.join(ROLES)}")
    if role != ADMIN and role_of(user) == ADMIN and not _administers(user.pk).exists():
        raise RoleError(f"{user.get_username()} is the last admin; make someone else admin first")
    previous = _assign(user, role)
    if previous != role:
        changes.record(
            ChangeKind.USER_ROLE, _subject(user), actor=actor_name(by), role=role, previous=previous
        )
    return previous


@transaction.atomic
def do_create_user(username: str, role: str, password: str | None = None, by=None):
    """Create a login with a role; returns (user, password). Without a password one is
    generated: the caller shows it once, it is stored hashed only."""
    username = (username or "").strip()
    if not username:
        raise RoleError("a user name is needed")
    if role not in ROLES:
        raise RoleError(f"unknown role {role!r}; choose from {', '.join(ROLES)}")
    User = get_user_model()
    try:
        User._meta.get_field(User.USERNAME_FIELD).run_validators(username)
    except ValidationError as exc:
        raise RoleError(" ".join(exc.messages)) from None
    if User.objects.filter(**{User.USERNAME_FIELD: username}).exists():
        raise RoleError(f"a user named {username!r} exists already")
    password = password or secrets.token_urlsafe(12)
    user = User.objects.create_user(username, password=password)
    _assign(user, role)
    changes.record(ChangeKind.USER_CREATED, _subject(user), actor=actor_name(by), role=role)
    return user, password
