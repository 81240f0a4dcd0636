"""An action records the preview it confirms and the key of the bulk request that asked
for it, each unique per task (issue 39): a confirmation sent twice, or twenty times at
once, makes one action. Earlier actions have neither (NULLs are distinct)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0025_storage_limits"),
    ]

    operations = [
        migrations.AddField(
            model_name="action",
            name="confirms",
            field=models.CharField(max_length=32, null=True),
        ),
        migrations.AddField(
            model_name="action",
            name="bulk_key",
            field=models.CharField(max_length=200, null=True),
        ),
        migrations.AddConstraint(
            model_name="action",
            constraint=models.UniqueConstraint(
                fields=("task", "confirms"), name="action_one_per_preview"
            ),
        ),
        migrations.AddConstraint(
            model_name="action",
            constraint=models.UniqueConstraint(
                fields=("task", "bulk_key"), name="action_one_per_bulk_key"
            ),
        ),
    ]
