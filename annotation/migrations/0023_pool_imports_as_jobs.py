"""A pool's background import becomes a job of the `pool_import` kind: each `ImportJob` row is written as a `Job`
(its status; a reading or writing one running in that phase, its lease kept on the job's one chunk, so that the
sweeper or `resume_jobs` takes it over as before), its own row a `PoolImport` keyed by the job, and its stored pieces
the job's `JobInput` (named by the file's index). Reversible: the jobs of that kind are written back as `ImportJob`
rows with their pieces."""

import django.db.models.deletion
from django.db import migrations, models
from django.utils import timezone

KIND = "pool_import"
RUNNING_PHASES = ("reading", "writing")


def imports_to_jobs(apps, schema_editor):
    ImportJob = apps.get_model("annotation", "ImportJob")
    ImportFileChunk = apps.get_model("annotation", "ImportFileChunk")
    PoolImport = apps.get_model("annotation", "PoolImport")
    Job = apps.get_model("generation", "Job")
    JobChunk = apps.get_model("generation", "JobChunk")
    JobInput = apps.get_model("generation", "JobInput")
    for old in ImportJob.objects.order_by("pk"):
        running = old.status in RUNNING_PHASES
        done = old.status == "done"
        job = Job.objects.create(
            kind=KIND,
            model=None,
            status="running" if running else old.status,
            phase=old.status if running else "",
            total_units=1,
            total_items=1,
            done_units=int(done),
            done_items=int(done),
            created_by_id=old.created_by_id,
            started_at=old.started_at,
            finished_at=old.finished_at,
            run_started_at=old.started_at,
        )
        Job.objects.filter(pk=job.pk).update(created_at=old.created_at)  # auto_now_add wrote the time of this run
        JobChunk.objects.create(
            job=job,
            index=0,
            unit_ids=[0],
            finished_at=(old.finished_at or timezone.now()) if done else None,
            lease_owner=old.lease_owner if running else "",
            lease_expires_at=old.lease_expires_at if running else None,
            started_at=old.started_at,
        )
        PoolImport.objects.create(
            job=job,
            pool_id=old.pool_id,
            kind=old.kind,
            file_names=old.file_names,
            bytes_total=old.bytes_total,
            rows_read=old.rows_read,
            rows_written=old.rows_written,
            items_created=old.items_created,
            heuristic_mismatches=old.heuristic_mismatches,
            written=done,
            errors=old.errors,
            error_count=old.error_count,
            options=old.options,
        )
        for piece in ImportFileChunk.objects.filter(job=old).order_by("file_index", "seq"):
            JobInput.objects.create(job=job, name=str(piece.file_index), seq=piece.seq, data=piece.data)


def jobs_to_imports(apps, schema_editor):
    ImportJob = apps.get_model("annotation", "ImportJob")
    ImportFileChunk = apps.get_model("annotation", "ImportFileChunk")
    PoolImport = apps.get_model("annotation", "PoolImport")
    Job = apps.get_model("generation", "Job")
    JobInput = apps.get_model("generation", "JobInput")
    for row in PoolImport.objects.select_related("job").order_by("pk"):
        job = row.job
        chunk = job.chunks.order_by("index").first()
        running = job.status == "running"
        old = ImportJob.objects.create(
            pool_id=row.pool_id,
            kind=row.kind,
            status=(job.phase or "reading") if running else job.status,
            file_names=row.file_names,
            bytes_total=row.bytes_total,
            rows_read=row.rows_read,
            rows_written=row.rows_written,
            items_created=row.items_created,
            heuristic_mismatches=row.heuristic_mismatches,
            errors=row.errors,
            error_count=row.error_count,
            options=row.options,
            created_by_id=job.created_by_id,
            started_at=job.started_at,
            finished_at=job.finished_at,
            lease_owner=chunk.lease_owner if chunk is not None and running else "",
            lease_expires_at=chunk.lease_expires_at if chunk is not None and running else None,
        )
        ImportJob.objects.filter(pk=old.pk).update(created_at=job.created_at)
        for piece in JobInput.objects.filter(job=job).order_by("name", "seq"):
            ImportFileChunk.objects.create(job=old, file_index=int(piece.name), seq=piece.seq, data=piece.data)
    Job.objects.filter(kind=KIND).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0022_pool_import"),
        ("generation", "0024_dataset_imports_as_jobs"),
    ]

    operations = [
        migrations.RunPython(imports_to_jobs, jobs_to_imports),
        migrations.DeleteModel(name="ImportFileChunk"),
        migrations.DeleteModel(name="ImportJob"),
        migrations.AlterField(
            model_name="poolimport",
            name="pool",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="import_jobs", to="annotation.pool"
            ),
        ),
    ]
