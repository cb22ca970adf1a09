"""Jobs of kinds without a model (an upload's import): `Job.model` may be empty, `Job.phase` says what a running job
is doing; `JobInput` holds the files a job was given; `DatasetUpload` is the `dataset_import` kind's row. The rows
move in 0024 (a transaction of their own: PostgreSQL alters no table with pending trigger events)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("generation", "0022_merge_endpoints"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="phase",
            field=models.CharField(
                blank=True,
                help_text="what a running job is doing, in its kind's words (an import: reading)",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="job",
            name="model",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="jobs",
                to="generation.languagemodel",
            ),
        ),
        migrations.CreateModel(
            name="JobInput",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(help_text="which of the job's files: its index, or its key", max_length=16)),
                ("seq", models.PositiveIntegerField()),
                ("data", models.BinaryField()),
                (
                    "job",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="inputs", to="generation.job"
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("job", "name", "seq"), name="job_input_piece_unique")],
            },
        ),
        migrations.CreateModel(
            name="DatasetUpload",
            fields=[
                (
                    "job",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="dataset_upload",
                        serialize=False,
                        to="generation.job",
                    ),
                ),
                ("name", models.CharField(help_text="the dataset's name", max_length=64)),
                ("names_per_template", models.PositiveIntegerField(default=15)),
                ("seed", models.BigIntegerField(default=42)),
                (
                    "file_names",
                    models.JSONField(default=dict, help_text="codebook, templates, names: the uploaded files' names"),
                ),
                ("bytes_total", models.BigIntegerField(default=0)),
                (
                    "instances_expected",
                    models.PositiveIntegerField(default=0, help_text="known once every line is checked"),
                ),
                ("instances_written", models.PositiveIntegerField(default=0)),
                (
                    "created_dataset",
                    models.BooleanField(default=False, help_text="False: the same files were imported already"),
                ),
                ("written", models.BooleanField(default=False, help_text="the import ended with every row written")),
                (
                    "errors",
                    models.JSONField(
                        default=list, help_text="FILE:LINE: field problem, the first ones (nothing written)"
                    ),
                ),
                ("error_count", models.PositiveIntegerField(default=0)),
            ],
            options={"ordering": ["-job_id"]},
        ),
    ]
