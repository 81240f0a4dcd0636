import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0005_roles"),
    ]

    operations = [
        migrations.CreateModel(
            name="FollowState",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("position", models.BigIntegerField(default=0)),
                ("memory", models.JSONField(default=dict)),
                ("db_path", models.TextField(default="")),
                ("db_inode", models.BigIntegerField(null=True)),
                ("db_marker", models.CharField(default="", max_length=300)),
                ("last_event_id", models.CharField(default="", max_length=300)),
                ("imported_at", models.DateTimeField(null=True)),
                ("imports", models.IntegerField(default=0)),
                ("rows_read", models.BigIntegerField(default=0)),
                ("rows_skipped", models.BigIntegerField(default=0)),
                ("rows_unknown", models.BigIntegerField(default=0)),
                ("values_unknown", models.BigIntegerField(default=0)),
                ("unknown", models.JSONField(default=dict)),
                ("events_sent", models.BigIntegerField(default=0)),
                ("last_error", models.TextField(blank=True, default="")),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "source",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="follow_state",
                        to="core.source",
                    ),
                ),
            ],
        ),
    ]
