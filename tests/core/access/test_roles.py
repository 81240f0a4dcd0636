"""Roles as groups (viewer, operator, admin), who may change them, and `create_user`."""

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from supervisor.core.access.roles import RoleError, do_create_user, do_set_role, role_of
from supervisor.core.models import Change
from supervisor.ops.startup import ensure_first_login

pytestmark = pytest.mark.django_db


def test_the_migration_makes_three_groups_with_their_permissions():
    groups = {
        group.name: {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}
        for group in Group.objects.prefetch_related("permissions__content_type")
    }
    assert groups == {
        "viewer": set(),
        "operator": {"core.act"},
        "admin": {"core.act", "core.administer"},
    }


@pytest.mark.parametrize(
    ("role", "acts", "administers"),
    [("viewer", False, False), ("operator", True, False), ("admin", True, True)],
)
def test_a_role_grants_its_permissions(role, acts, administers):
    user, _ = do_create_user(f"someone-{role}", role)
    assert user.has_perm("core.act") is acts
    assert user.has_perm("core.administer") is administers
    assert role_of(user) == role


def test_setting_a_role_replaces_the_old_one_and_is_recorded():
    admin, _ = do_create_user("boss", "admin")
    user, _ = do_create_user("ann", "viewer")
    assert do_set_role(user, "operator", by=admin) == "viewer"
    assert [g.name for g in user.groups.all()] == ["operator"]
    assert user.has_perm("core.act")  # the permission cache was dropped
    change = Change.objects.filter(kind="user.role").get()
    assert (change.subject_type, change.subject_id) == ("user", "ann")
    assert change.payload == {"actor": "user:boss", "role": "operator", "previous": "viewer"}


def test_setting_the_same_role_again_records_nothing():
    user, _ = do_create_user("ann", "operator")
    do_set_role(user, "operator")
    assert not Change.objects.filter(kind="user.role").exists()


def test_the_last_admin_cannot_lose_the_role():
    admin, _ = do_create_user("boss", "admin")
    with pytest.raises(RoleError, match="last admin"):
        do_set_role(admin, "operator", by=admin)
    assert role_of(admin) == "admin"
    do_create_user("second", "admin")
    do_set_role(admin, "operator", by=admin)
    assert role_of(admin) == "operator"


def test_an_unknown_role_is_refused():
    user, _ = do_create_user("ann", "viewer")
    with pytest.raises(RoleError, match="unknown role"):
        do_set_role(user, "root")


def test_create_user_prints_a_generated_password_once(capsys):
    call_command("create_user", "ann", "--role", "operator")
    out, err = capsys.readouterr()
    password = out.strip()
    assert len(password) >= 12 and "\n" not in password
    assert "not shown again" in err and password not in err
    user = authenticate(username="ann", password=password)
    assert user is not None and role_of(user) == "operator"
    created = Change.objects.get(kind="user.created")
    assert created.payload == {"actor": "system", "role": "operator"}


def test_create_user_reads_the_password_file(tmp_path, capsys):
    secret = tmp_path / "pw"
    secret.write_text("correct horse battery staple\n")
    call_command("create_user", "bob", "--role", "admin", "--password-file", str(secret))
    out, _ = capsys.readouterr()
    assert out == ""  # nothing secret printed
    user = authenticate(username="bob", password="correct horse battery staple")
    assert user is not None and user.has_perm("core.administer")


def test_create_user_refuses_a_short_password_file(tmp_path):
    secret = tmp_path / "pw"
    secret.write_text("short\n")
    with pytest.raises(CommandError, match="too short"):
        call_command("create_user", "bob", "--role", "viewer", "--password-file", str(secret))


def test_create_user_refuses_a_taken_name():
    do_create_user("ann", "viewer")
    with pytest.raises(CommandError, match="exists already"):
        call_command("create_user", "ann", "--role", "admin")


def test_create_user_refuses_an_unknown_role():
    with pytest.raises(CommandError):
        call_command("create_user", "ann", "--role", "root")


def test_the_first_login_is_an_admin(django_user_model, capsys):
    ensure_first_login()
    user = django_user_model.objects.get(username="admin")
    assert role_of(user) == "admin" and not user.is_superuser
    assert user.has_perm("core.act") and user.has_perm("core.administer")


def test_create_user_refuses_a_name_with_spaces():
    with pytest.raises(CommandError, match="Enter a valid username"):
        call_command("create_user", "ann smith", "--role", "viewer")
