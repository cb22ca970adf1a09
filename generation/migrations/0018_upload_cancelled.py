"""The uploads' cancelled status is spelled as a job's: the column widened to 9 and the rows written as "canceled"
renamed."""

from django.db import migrations, models


def spelled_as_a_job(apps, schema_editor):
    apps.get_model("generation", "DatasetImport").objects.filter(status="canceled").update(status="cancelled")


def spelled_as_before(apps, schema_editor):
    apps.get_model("generation", "DatasetImport").objects.filter(status="cancelled").update(status="canceled")


class Migration(migrations.Migration):
    dependencies = [
        ("generation", "0017_upload_cancel"),
    ]

    operations = [
        migrations.AlterField(
            model_name="datasetimport",
            name="status",
            field=models.CharField(
                choices=[(s, s) for s in ("queued", "checking", "writing", "done", "failed", "cancelled")],
                default="queued",
                max_length=9,
            ),
        ),
        migrations.RunPython(spelled_as_a_job, spelled_as_before),
    ]
