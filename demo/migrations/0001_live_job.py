import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    # It names generation's job model by its name before 0014 renamed it.
    run_before = [("generation", "0014_job_generic")]

    dependencies = [
        ("generation", "0008_instance_distractors"),
    ]

    operations = [
        migrations.CreateModel(
            name="LiveJob",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("dataset_name", models.CharField(max_length=100, unique=True)),
                (
                    "job",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="generation.generationjob"
                    ),
                ),
            ],
        ),
    ]
