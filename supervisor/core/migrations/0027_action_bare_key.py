"""Keys sent out are namespaced (issue 39): the actions already made keep sending their
bare key, so that one in flight carries on every send the key it was first sent with."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0026_action_confirms"),
    ]

    operations = [
        # Every row there is now was made before: it keeps its bare key.
        migrations.AddField(
            model_name="action",
            name="bare_key",
            field=models.BooleanField(default=True),
        ),
        # From here on, an action is sent with its namespace's key.
        migrations.AlterField(
            model_name="action",
            name="bare_key",
            field=models.BooleanField(default=False),
        ),
    ]
