from django.db import migrations, models
from django.db.models import F

CHUNK = 2000


def fill_title_keys(apps, schema_editor):
    """Every task's title as the contract compares it: trimmed, white space collapsed
    (core.ownership.normalized, copied here as migrations must not import the app)."""
    Task = apps.get_model("core", "Task")
    Task.objects.update(title_key=F("title"))  # most titles are normalized already
    changed = []
    for pk, title in Task.objects.values_list("pk", "title").iterator(chunk_size=CHUNK):
        key = " ".join(title.split())
        if key != title:
            changed.append(Task(pk=pk, title_key=key))
        if len(changed) >= CHUNK:
            Task.objects.bulk_update(changed, ["title_key"])
            changed = []
    Task.objects.bulk_update(changed, ["title_key"])


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0013_out_of_date_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="task",
            name="title_key",
            field=models.TextField(default="", db_default=""),
        ),
        migrations.RunPython(fill_title_keys, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="task",
            index=models.Index(fields=["parent_thread", "title_key"], name="task_parent_title"),
        ),
    ]
