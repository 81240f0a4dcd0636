"""The three roles as groups: viewer (reads), operator (core.act), admin (core.act and
core.administer)."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

# A frozen copy of supervisor.core.roles.ROLES: migrations do not import live code.
ROLES = {
    "viewer": (),
    "operator": ("act",),
    "admin": ("act", "administer"),
}


def create_roles(apps, schema_editor):
    db = schema_editor.connection.alias
    # post_migrate makes permissions only after the whole run; the groups need them now.
    create_permissions(global_apps.get_app_config("core"), apps=apps, verbosity=0, using=db)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in ROLES.items():
        group, _ = Group.objects.using(db).get_or_create(name=name)
        group.permissions.set(
            Permission.objects.using(db).filter(
                content_type__app_label="core", codename__in=codenames
            )
        )


def remove_roles(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.using(schema_editor.connection.alias).filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0004_actions_and_connectors"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_roles, remove_roles)]
