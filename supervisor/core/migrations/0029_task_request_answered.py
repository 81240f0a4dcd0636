"""Each task request keeps whether a known task answers it (issue 42), kept by ingest
from now on; the requests stored before are answered here, from the tasks stored."""

from django.db import migrations, models
from django.db.models import Exists, OuterRef


def answer_stored_requests(apps, schema_editor):
    Task = apps.get_model("core", "Task")
    TaskRequest = apps.get_model("core", "TaskRequest")
    answering = Task.objects.filter(
        namespace_id=OuterRef("namespace_id"),
        known=True,
        parent_thread_id=OuterRef("parent_thread_id"),
        client_request_id=OuterRef("client_request_id"),
    )
    TaskRequest.objects.update(answered=Exists(answering))


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0028_task_settled"),
    ]

    operations = [
        migrations.AddField(
            model_name="taskrequest",
            name="answered",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddIndex(
            model_name="taskrequest",
            index=models.Index(
                condition=models.Q(("answered", False)),
                fields=["parent_thread"],
                name="task_request_open",
            ),
        ),
        migrations.RunPython(answer_stored_requests, migrations.RunPython.noop),
    ]
