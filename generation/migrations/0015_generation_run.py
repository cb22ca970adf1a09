"""A generation job's parameters move from the job into the generation kind's own table (`GenerationRun`); the
engine and RUFF's distractor filters, kept in the job's options until now, become its columns. 0016 drops the job's
old columns once the judge runs have read their seed (judging 0006)."""

import django.db.models.deletion
from django.db import migrations, models

MOVED = ("pronouns", "settings", "samples", "max_new_tokens", "top_k", "top_p", "num_beams", "seed", "per_pronoun",
         "prob_score")  # fmt: skip
FROM_OPTIONS = ("engine", "distractors", "sample_seed")


def runs_write(apps, schema_editor):
    Job = apps.get_model("generation", "Job")
    GenerationRun = apps.get_model("generation", "GenerationRun")
    runs, jobs = [], []
    for job in Job.objects.filter(kind="generation").iterator():
        options = dict(job.options or {})
        moved = {name: options.pop(name, None) for name in FROM_OPTIONS}
        runs.append(
            GenerationRun(
                job_id=job.pk,
                dataset_id=job.dataset_id,
                **{name: getattr(job, name) for name in MOVED},
                engine=moved["engine"] or "",
                distractors=moved["distractors"],
                sample_seed=None if moved["sample_seed"] in (None, "", "none") else int(moved["sample_seed"]),
            )
        )
        job.options = options
        jobs.append(job)
    GenerationRun.objects.bulk_create(runs, batch_size=1000)
    Job.objects.bulk_update(jobs, ["options"], batch_size=1000)


def runs_read(apps, schema_editor):
    Job = apps.get_model("generation", "Job")
    GenerationRun = apps.get_model("generation", "GenerationRun")
    for run in GenerationRun.objects.select_related("job").iterator():
        job = run.job
        for name in MOVED:
            setattr(job, name, getattr(run, name))
        job.dataset_id = run.dataset_id
        extra = {"engine": run.engine or None, "distractors": run.distractors, "sample_seed": run.sample_seed}
        job.options = {**job.options, **{key: value for key, value in extra.items() if value is not None}}
        job.save()


class Migration(migrations.Migration):
    dependencies = [("generation", "0014_job_generic")]

    operations = [
        migrations.CreateModel(
            name="GenerationRun",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("pronouns", models.JSONField(help_text='base pronouns, e.g. ["he", "xe"]')),
                ("settings", models.JSONField(help_text='["pre", "post"] or a subset')),
                ("samples", models.PositiveSmallIntegerField(default=5)),
                ("max_new_tokens", models.PositiveSmallIntegerField(default=50)),
                ("top_k", models.PositiveIntegerField(default=50)),
                ("top_p", models.FloatField(default=0.95)),
                ("num_beams", models.PositiveSmallIntegerField(default=1)),
                ("seed", models.BigIntegerField(default=0)),
                (
                    "per_pronoun",
                    models.PositiveIntegerField(blank=True, help_text="first N instances per pronoun", null=True),
                ),
                (
                    "prob_score",
                    models.CharField(
                        choices=[("mean", "mean token loss"), ("sum", "summed log-probability")],
                        default="mean",
                        help_text="how probability scoring scores a candidate: mean (the paper's) or sum (RUFF's)",
                        max_length=8,
                    ),
                ),
                (
                    "engine",
                    models.CharField(
                        blank=True, help_text="hf or vllm; empty: the worker's (CONCORD_ENGINE)", max_length=16
                    ),
                ),
                (
                    "distractors",
                    models.PositiveSmallIntegerField(
                        blank=True,
                        help_text="RUFF with distractors: only instances with this many distractor sentences",
                        null=True,
                    ),
                ),
                (
                    "sample_seed",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="RUFF with distractors: only RUFF's evaluation sample drawn with this seed",
                        null=True,
                    ),
                ),
                (
                    "dataset",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="generation_runs",
                        to="generation.dataset",
                    ),
                ),
                (
                    "job",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="generation_run",
                        to="generation.job",
                    ),
                ),
            ],
        ),
        migrations.RunPython(runs_write, runs_read),
    ]
