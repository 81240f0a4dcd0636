"""Foreign keys lose their own index where a composite index already leads with them
(issue 42): every row ingest inserts and every evaluation updates maintained both.

The indexes are dropped by name, not by altering the fields: SQLite alters a field by
copying its table, which on a large store would take the events table with it."""

import django.db.models.deletion
from django.db import migrations, models

# (model, field) whose own index goes.
UNINDEXED = [
    ("backgrounditem", "namespace"),
    ("ingestedevent", "source"),
    ("run", "namespace"),
    ("run", "thread"),
    ("task", "namespace"),
    ("task", "parent_thread"),
    ("taskreport", "source"),
    ("taskreport", "task"),
    ("taskrequest", "source"),
    ("thread", "namespace"),
    ("toolrejection", "source"),
    ("wake", "namespace"),
]


def _indexes(apps, schema_editor):
    """(index name, table, column) of each: the name Django gave the foreign key's index."""
    for model_name, field_name in UNINDEXED:
        model = apps.get_model("core", model_name)
        table, column = model._meta.db_table, model._meta.get_field(field_name).column
        yield schema_editor._create_index_name(table, [column], suffix=""), table, column


def drop_indexes(apps, schema_editor):
    for name, _, _ in _indexes(apps, schema_editor):
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")


def restore_indexes(apps, schema_editor):
    quote = schema_editor.quote_name
    for name, table, column in _indexes(apps, schema_editor):
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {quote(name)} ON {quote(table)} ({quote(column)})"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0029_task_request_answered"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="backgrounditem",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        to="core.namespace",
                    ),
                ),
                migrations.AlterField(
                    model_name="ingestedevent",
                    name="source",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        to="core.source",
                    ),
                ),
                migrations.AlterField(
                    model_name="run",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        to="core.namespace",
                    ),
                ),
                migrations.AlterField(
                    model_name="run",
                    name="thread",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="runs",
                        to="core.thread",
                    ),
                ),
                migrations.AlterField(
                    model_name="task",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        to="core.namespace",
                    ),
                ),
                migrations.AlterField(
                    model_name="task",
                    name="parent_thread",
                    field=models.ForeignKey(
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="delegated_tasks",
                        to="core.thread",
                    ),
                ),
                migrations.AlterField(
                    model_name="taskreport",
                    name="source",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        to="core.source",
                    ),
                ),
                migrations.AlterField(
                    model_name="taskreport",
                    name="task",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="reports",
                        to="core.task",
                    ),
                ),
                migrations.AlterField(
                    model_name="taskrequest",
                    name="source",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        to="core.source",
                    ),
                ),
                migrations.AlterField(
                    model_name="thread",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        to="core.namespace",
                    ),
                ),
                migrations.AlterField(
                    model_name="toolrejection",
                    name="source",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        to="core.source",
                    ),
                ),
                migrations.AlterField(
                    model_name="wake",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        to="core.namespace",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(drop_indexes, restore_indexes)],
        ),
    ]
