"""Tasks settled when last judged are left out of the evaluations their parent thread's
events make (issue 42). Every row starts unsettled: judged as before until judged again."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0027_action_bare_key"),
    ]

    operations = [
        migrations.AddField(
            model_name="task",
            name="settled",
            field=models.BooleanField(db_default=False, default=False),
        ),
    ]
