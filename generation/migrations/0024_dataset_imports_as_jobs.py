"""A templates dataset's background upload becomes a job of the `dataset_import` kind: each `DatasetImport` row is
written as a `Job` (its status; a checking or writing one running in that phase, its lease kept on the job's one
chunk, so that the sweeper or `resume_jobs` takes it over as before), its own row a `DatasetUpload` keyed by the job,
and its stored pieces the job's `JobInput`. Reversible: the jobs of that kind are written back as `DatasetImport`
rows with their pieces."""

from django.db import migrations
from django.utils import timezone

KIND = "dataset_import"
RUNNING_PHASES = ("checking", "writing")


def imports_to_jobs(apps, schema_editor):
    DatasetImport = apps.get_model("generation", "DatasetImport")
    DatasetImportFile = apps.get_model("generation", "DatasetImportFile")
    Job = apps.get_model("generation", "Job")
    JobChunk = apps.get_model("generation", "JobChunk")
    JobInput = apps.get_model("generation", "JobInput")
    DatasetUpload = apps.get_model("generation", "DatasetUpload")
    for old in DatasetImport.objects.order_by("pk"):
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
        DatasetUpload.objects.create(
            job=job,
            name=old.name,
            names_per_template=old.names_per_template,
            seed=old.seed,
            file_names=old.file_names,
            bytes_total=old.bytes_total,
            instances_expected=old.instances_expected,
            instances_written=old.instances_written,
            created_dataset=old.created_dataset,
            written=done,
            errors=old.errors,
            error_count=old.error_count,
        )
        for piece in DatasetImportFile.objects.filter(job=old).order_by("key", "seq"):
            JobInput.objects.create(job=job, name=piece.key, seq=piece.seq, data=piece.data)


def jobs_to_imports(apps, schema_editor):
    DatasetImport = apps.get_model("generation", "DatasetImport")
    DatasetImportFile = apps.get_model("generation", "DatasetImportFile")
    Job = apps.get_model("generation", "Job")
    JobInput = apps.get_model("generation", "JobInput")
    DatasetUpload = apps.get_model("generation", "DatasetUpload")
    for row in DatasetUpload.objects.select_related("job").order_by("pk"):
        job = row.job
        chunk = job.chunks.order_by("index").first()
        running = job.status == "running"
        old = DatasetImport.objects.create(
            name=row.name,
            names_per_template=row.names_per_template,
            seed=row.seed,
            file_names=row.file_names,
            bytes_total=row.bytes_total,
            status=(job.phase or "checking") if running else job.status,
            instances_expected=row.instances_expected,
            instances_written=row.instances_written,
            created_dataset=row.created_dataset,
            errors=row.errors,
            error_count=row.error_count,
            created_by_id=job.created_by_id,
            started_at=job.started_at,
            finished_at=job.finished_at,
            lease_owner=chunk.lease_owner if chunk is not None and running else "",
            lease_expires_at=chunk.lease_expires_at if chunk is not None and running else None,
        )
        DatasetImport.objects.filter(pk=old.pk).update(created_at=job.created_at)
        for piece in JobInput.objects.filter(job=job).order_by("name", "seq"):
            DatasetImportFile.objects.create(job=old, key=piece.name, seq=piece.seq, data=piece.data)
    Job.objects.filter(kind=KIND).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("generation", "0023_job_inputs_and_dataset_uploads"),
    ]

    operations = [
        migrations.RunPython(imports_to_jobs, jobs_to_imports),
        migrations.DeleteModel(name="DatasetImportFile"),
        migrations.DeleteModel(name="DatasetImport"),
    ]
