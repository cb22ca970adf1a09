"""A judge run's mode, samples per item, temperature and seed move from its job (options and seed) into the run's
own columns, stored once; the judge job's options are emptied."""

from django.db import migrations, models


def parameters_write(apps, schema_editor):
    JudgeRun = apps.get_model("judging", "JudgeRun")
    Job = apps.get_model("generation", "Job")
    runs, jobs = [], []
    for run in JudgeRun.objects.select_related("job").iterator():
        options = run.job.options or {}
        run.mode = options.get("mode") or ("imported" if run.origin == "imported" else "likelihood")
        run.k = int(options.get("k") or 1)
        run.temperature = float(options.get("temperature") or 1.0)
        run.seed = run.job.seed
        runs.append(run)
        run.job.options = {}
        jobs.append(run.job)
    JudgeRun.objects.bulk_update(runs, ["mode", "k", "temperature", "seed"], batch_size=1000)
    Job.objects.bulk_update(jobs, ["options"], batch_size=1000)


def parameters_read(apps, schema_editor):
    JudgeRun = apps.get_model("judging", "JudgeRun")
    for run in JudgeRun.objects.select_related("job", "judge", "pool").iterator():
        job = run.job
        scope = {"pool_id": run.pool_id, "pool": run.pool.name} if run.pool_id else {"job_id": run.source_job_id}
        job.options = {
            **scope, "judge_id": run.judge_id, "judge": run.judge.name, "version": run.judge.version,
            "mode": run.mode, "k": run.k, "temperature": run.temperature,
        }  # fmt: skip
        job.seed = run.seed
        job.save()


class Migration(migrations.Migration):
    dependencies = [("judging", "0005_job_generic"), ("generation", "0015_generation_run")]

    operations = [
        migrations.AddField(
            model_name="judgerun",
            name="mode",
            field=models.CharField(
                choices=[
                    ("likelihood", "likelihood (mean log-probability of each option)"),
                    ("sampling", "sampling (k samples, majority vote)"),
                    ("imported", "imported (labels made elsewhere; never run by Concord)"),
                ],
                default="likelihood",
                help_text="likelihood, sampling or imported",
                max_length=10,
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="judgerun",
            name="k",
            field=models.PositiveIntegerField(default=1, help_text="samples per item (sampling mode; 1 otherwise)"),
        ),
        migrations.AddField(
            model_name="judgerun",
            name="temperature",
            field=models.FloatField(default=1.0, help_text="the sampling temperature (sampling mode; 1.0 otherwise)"),
        ),
        migrations.AddField(model_name="judgerun", name="seed", field=models.BigIntegerField(default=0)),
        migrations.RunPython(parameters_write, parameters_read),
        migrations.AddConstraint(
            model_name="judgerun", constraint=models.CheckConstraint(condition=models.Q(k__gte=1), name="judge_run_k_positive")
        ),
        migrations.AddConstraint(
            model_name="judgerun",
            constraint=models.CheckConstraint(
                condition=models.Q(temperature__gt=0), name="judge_run_temperature_positive"
            ),
        ),
        migrations.AlterField(
            model_name="judgerun",
            name="job",
            field=models.OneToOneField(
                help_text="the judge job that does the run's work",
                on_delete=models.deletion.CASCADE,
                related_name="judge_run",
                to="generation.job",
            ),
        ),
    ]
