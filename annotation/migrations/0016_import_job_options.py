from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0015_pool_active"),
    ]

    operations = [
        migrations.AddField(
            model_name="importjob",
            name="options",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
