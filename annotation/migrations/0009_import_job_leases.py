from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_distractor_referents"),
    ]

    operations = [
        migrations.AddField(
            model_name="importjob",
            name="lease_owner",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="importjob",
            name="lease_expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
