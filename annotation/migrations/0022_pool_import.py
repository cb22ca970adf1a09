"""`PoolImport`: the `pool_import` job kind's row (a pool's import of generation files). The rows move in 0023 (a
transaction of its own: PostgreSQL alters no table with pending trigger events)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0021_merge_scales"),
        ("generation", "0023_job_inputs_and_dataset_uploads"),
    ]

    operations = [
        migrations.CreateModel(
            name="PoolImport",
            fields=[
                (
                    "job",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="pool_import",
                        serialize=False,
                        to="generation.job",
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("study", "study item"),
                            ("gold", "gold item (known answer, hidden among study items)"),
                            ("training", "training item (qualification round)"),
                        ],
                        default="study",
                        max_length=8,
                    ),
                ),
                ("file_names", models.JSONField(default=list)),
                ("bytes_total", models.BigIntegerField(default=0)),
                ("rows_read", models.PositiveIntegerField(default=0)),
                ("rows_written", models.PositiveIntegerField(default=0)),
                ("items_created", models.PositiveIntegerField(default=0)),
                ("heuristic_mismatches", models.PositiveIntegerField(default=0)),
                ("written", models.BooleanField(default=False, help_text="the import ended with every row written")),
                (
                    "errors",
                    models.JSONField(
                        default=list, help_text="FILE:LINE: problem, the first ones (the import wrote nothing)"
                    ),
                ),
                ("error_count", models.PositiveIntegerField(default=0)),
                ("options", models.JSONField(blank=True, default=dict)),
                (
                    "pool",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="import_jobs_new",
                        to="annotation.pool",
                    ),
                ),
            ],
            options={"ordering": ["-job_id"]},
        ),
    ]
