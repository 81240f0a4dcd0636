"""Task requests (issue 31): a parent asked to delegate a task, no child yet."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0023_failure_class"),
    ]

    operations = [
        migrations.CreateModel(
            name="TaskRequest",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("event_id", models.CharField(max_length=200)),
                ("at", models.DateTimeField()),
                ("client_request_id", models.CharField(max_length=500)),
                ("parent_run", models.CharField(max_length=500, null=True)),
                ("title", models.TextField(null=True)),
                ("env", models.CharField(max_length=200, null=True)),
                (
                    "namespace",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, to="core.namespace"
                    ),
                ),
                (
                    "parent_thread",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="requests",
                        to="core.thread",
                    ),
                ),
                (
                    "source",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, to="core.source"
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("source", "event_id"), name="task_request_unique"
                    )
                ],
            },
        ),
    ]
