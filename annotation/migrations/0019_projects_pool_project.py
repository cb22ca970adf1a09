import django.db.models.deletion
from django.db import migrations, models

import accounts.models


def into_default_project(apps, schema_editor):
    """Every pool of the day goes to the default project (made by accounts' migration, with every researcher)."""
    Project = apps.get_model("accounts", "Project")
    Pool = apps.get_model("annotation", "Pool")
    project, _ = Project.objects.get_or_create(name="default")
    Pool.objects.filter(project__isnull=True).update(project=project)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_projects_projects"),
        ("annotation", "0018_upload_cancelled"),
    ]

    operations = [
        migrations.AddField(
            model_name="pool",
            name="project",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="pools", to="accounts.project"
            ),
        ),
        migrations.RunPython(into_default_project, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="pool",
            name="project",
            field=models.ForeignKey(
                default=accounts.models.default_project_id,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="pools",
                to="accounts.project",
            ),
        ),
    ]
