"""An action's idempotency key is unique within its task's namespace, not across
namespaces (issue 29): another namespace using the same key is making a request of its
own, not reusing this one's. The namespace is copied onto each action to hold the
constraint."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def copy_task_namespaces(apps, schema_editor):
    Action = apps.get_model("core", "Action")
    Task = apps.get_model("core", "Task")
    namespace = Task.objects.filter(pk=OuterRef("task_id")).values("namespace_id")
    Action.objects.update(namespace_id=Subquery(namespace))


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0018_reserved_source_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="action",
            name="namespace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="core.namespace",
            ),
        ),
        migrations.RunPython(copy_task_namespaces, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="action",
            name="namespace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="core.namespace",
            ),
        ),
        migrations.AlterField(
            model_name="action",
            name="idempotency_key",
            field=models.CharField(max_length=200),
        ),
        migrations.AddConstraint(
            model_name="action",
            constraint=models.UniqueConstraint(
                fields=("namespace", "idempotency_key"), name="action_key_per_namespace"
            ),
        ),
    ]
