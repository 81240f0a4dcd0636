"""What storage holds (issue 39). The index of a task's title key is over its hash: a
title of more than about 2,700 bytes (after compression) did not fit a btree row, and
PostgreSQL refused its whole batch. A source's name holds an internal source's
(`supervisor@` and a namespace's 200 characters), an action's actor `source:` and it."""

from django.db import migrations, models
from django.db.models.functions import MD5

EMPTY_MD5 = "d41d8cd98f00b204e9800998ecf8427e"  # md5 of "" (core.models, copied)


def fill_title_hashes(apps, schema_editor):
    """Each task's title hash, as Task.hash_title writes it: md5 of the title key, in the
    database (PostgreSQL's md5(), Django's MD5 on SQLite), one statement for all."""
    Task = apps.get_model("core", "Task")
    Task.objects.exclude(title_key="").update(title_hash=MD5("title_key"))


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0024_task_request"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="task", name="task_parent_title"),
        migrations.AddField(
            model_name="task",
            name="title_hash",
            field=models.CharField(default=EMPTY_MD5, db_default=EMPTY_MD5, max_length=32),
        ),
        migrations.RunPython(fill_title_hashes, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="task",
            index=models.Index(
                fields=["parent_thread", "title_hash"], name="task_parent_title_hash"
            ),
        ),
        migrations.AlterField(
            model_name="source",
            name="name",
            field=models.CharField(max_length=211, unique=True),
        ),
        migrations.AlterField(
            model_name="action",
            name="actor_name",
            field=models.CharField(default="", max_length=218),
        ),
    ]
