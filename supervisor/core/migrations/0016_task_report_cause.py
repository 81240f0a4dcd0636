from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0015_run_first_run_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="taskreport",
            name="cause",
            field=models.CharField(max_length=10, null=True),
        ),
    ]
