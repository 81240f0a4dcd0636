from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0016_task_report_cause"),
    ]

    operations = [
        migrations.AddField(
            model_name="taskreport",
            name="delivery_record",
            field=models.CharField(max_length=20, null=True),
        ),
        migrations.AddField(
            model_name="taskreport",
            name="settled_deliveries",
            field=models.IntegerField(null=True),
        ),
    ]
