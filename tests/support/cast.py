"""The permission cast for page tests: a stranger and one user of each role."""

from django.contrib.auth import get_user_model

from supervisor.core.access.roles import do_set_role

ANONYMOUS, VIEWER, OPERATOR, ADMIN = "anonymous", "viewer", "operator", "admin"
CAST = (ANONYMOUS, VIEWER, OPERATOR, ADMIN)


def make_user(name: str, role: str, by=None):
    """A user with a role and no usable password (hashing one costs most of a second)."""
    user = get_user_model().objects.create_user(name)
    do_set_role(user, role, by=by)
    return user


def login_as(client, role: str):
    """Log `client` in as a new user of `role` and return the user (None for a stranger)."""
    if role == ANONYMOUS:
        return None
    user = make_user(f"as-{role}", role)
    client.force_login(user)
    return user
