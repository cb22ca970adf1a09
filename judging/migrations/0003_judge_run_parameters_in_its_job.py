"""A judge run's parameters live in its job only: `mode`, `k`, `temperature` (the job's options), `seed` (the job's
column) and `total_items` (the job's units). Every run gets a job: the values are copied into the job's options first
(the job of a run whose job was deleted is made again, finished or failed as its labels say), then the run's copies
go. Reversible: going back copies them out of the job again."""

from django.db import migrations, models
from django.utils import timezone


def _options(run) -> dict:
    scope = {"pool_id": run.pool_id, "pool": run.pool.name} if run.pool_id is not None else {"job_id": run.source_job_id}
    return {
        **scope,
        "judge_id": run.judge_id,
        "judge": run.judge.name,
        "version": run.judge.version,
        "mode": run.mode,
        "k": run.k,
        "temperature": run.temperature,
    }


def parameters_into_jobs(apps, schema_editor):
    JudgeRun = apps.get_model("judging", "JudgeRun")
    GenerationJob = apps.get_model("generation", "GenerationJob")
    MachineLabel = apps.get_model("judging", "MachineLabel")
    for run in JudgeRun.objects.select_related("judge", "pool", "job").order_by("pk"):
        if run.job_id is not None:
            job = run.job
            options = dict(job.options or {})
            for name in ("mode", "k", "temperature"):
                options.setdefault(name, getattr(run, name))
            job.options = options
            job.save(update_fields=["options"])
            continue
        done = MachineLabel.objects.filter(run=run).count()
        finished = bool(run.total_items) and done >= run.total_items
        job = GenerationJob.objects.create(
            kind="judge",
            options=_options(run),
            model_id=run.judge.model_id,
            dataset=None,
            pronouns=[],
            settings=[],
            seed=run.seed,
            status="done" if finished else "failed",
            error="" if finished else "its job was deleted; queue the run again",
            total_units=run.total_items,
            done_units=done,
            total_items=run.total_items,
            done_items=done,
            created_by_id=run.created_by_id,
            finished_at=timezone.now(),
        )
        run.job = job
        run.save(update_fields=["job"])


def parameters_out_of_jobs(apps, schema_editor):
    JudgeRun = apps.get_model("judging", "JudgeRun")
    for run in JudgeRun.objects.select_related("job").order_by("pk"):
        options = run.job.options or {}
        run.mode = options.get("mode", "likelihood")
        run.k = options.get("k", 1)
        run.temperature = options.get("temperature", 1.0)
        run.seed = run.job.seed
        run.total_items = run.job.total_units
        run.save(update_fields=["mode", "k", "temperature", "seed", "total_items"])


class Migration(migrations.Migration):
    dependencies = [
        ("generation", "0010_job_progress_neutral_names"),
        ("judging", "0002_judge_runs_over_jobs"),
    ]

    operations = [
        migrations.RunPython(parameters_into_jobs, parameters_out_of_jobs),
        migrations.AlterField(
            model_name="judgerun",
            name="job",
            field=models.OneToOneField(
                help_text="the judge job that does the run's work and holds its parameters",
                on_delete=models.deletion.CASCADE,
                related_name="judge_run",
                to="generation.generationjob",
            ),
        ),
        migrations.RemoveConstraint(model_name="judgerun", name="judge_run_k_positive"),
        migrations.RemoveConstraint(model_name="judgerun", name="judge_run_temperature_positive"),
        # A default first, so that going back can add the column to rows that exist (their values are copied after).
        migrations.AlterField(
            model_name="judgerun",
            name="mode",
            field=models.CharField(
                choices=[
                    ("likelihood", "likelihood (mean log-probability of each option)"),
                    ("sampling", "sampling (k samples, majority vote)"),
                ],
                default="likelihood",
                max_length=10,
            ),
        ),
        migrations.RemoveField(model_name="judgerun", name="mode"),
        migrations.RemoveField(model_name="judgerun", name="k"),
        migrations.RemoveField(model_name="judgerun", name="temperature"),
        migrations.RemoveField(model_name="judgerun", name="seed"),
        migrations.RemoveField(model_name="judgerun", name="total_items"),
    ]
