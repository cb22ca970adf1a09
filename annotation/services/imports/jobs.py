"""Imports from the browser and the API run as background jobs (docs/domain.md, "The annotation pool"), as generation
jobs do: the request stores the files and answers at once; a Celery worker (production) or a thread of the web
process (the embedded default, no broker) runs `generations_import` and keeps the job's row up to date.

The files are stored in the database (`ImportFileChunk`, 1 MiB each) rather than on a disk the worker may not
share, and read back as a stream; they are deleted when the job ends (generation/services/upload_runs.py, shared with a
templates dataset's upload, stores them and keeps the lease). Running a job twice is safe: rows already in
the pool are recognised by content and skipped.

A running import holds a lease, as a generation chunk does (generation/jobs/leases.py): its runner's name and an
expiry that a heartbeat renews. When its worker dies, the lease expires and any Celery worker's sweeper queues the
import again (`imports_requeue_stale`, within a lease and a sweep, about a minute), rather than the broker's
redelivery after its visibility timeout (an hour); `resume_jobs` resumes such imports too (`imports_resume`).

This module stores, queues and sweeps a job; annotation/services/imports/job_run.py runs it (the Celery task imports
only that one, so the task and the module that queues it never import each other).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from django.db import transaction

from annotation.models import ImportJob, Pool
from annotation.services.imports import KINDS
from annotation.services.imports.job_run import IMPORT_RUNS, import_job_progress, import_job_run
from common.audit import CREATE, audit_record
from common.errors import ServiceError
from generation.services.upload_runs import (
    PIECE_BYTES,
    run_cancel,
    run_dispatch,
    runs_left_unfinished,
    runs_requeue_stale,
    runs_to_resume,
    upload_store,
)

THREAD_PREFIX = IMPORT_RUNS.thread_prefix  # tests/conftest.py lets threads named concord-job-* finish with their test


class UploadedFile(Protocol):
    name: str | None

    def chunks(self, chunk_size: int | None = None) -> Iterable[bytes]: ...


class ImportJobError(ServiceError, ValueError):
    """The import cannot be queued (no files, too large, an unknown kind); nothing was written."""


def import_job_create(
    *, pool: Pool, kind: str, files: list[UploadedFile], created_by=None, options: dict | None = None
) -> ImportJob:
    """Store the uploaded files and queue their import into `pool`; the job runs once this transaction commits.
    `options`: `labels`, `positive` and `codebook` ({"name", "text"}) as `import_generations` takes them (checked by
    the caller: annotation/services/preview.py's `generation_options`)."""
    if kind not in KINDS:
        raise ImportJobError(f"unknown item kind {kind!r}: use one of {', '.join(KINDS)}")
    if not files:
        raise ImportJobError("no file was sent")
    names = [str(upload.name or f"file-{index + 1}.csv").replace("\x00", "") for index, upload in enumerate(files)]
    with transaction.atomic():
        job = ImportJob.objects.create(
            pool=pool, kind=kind, file_names=names, created_by=created_by, options=dict(options or {})
        )
        uploads = {index: upload.chunks(PIECE_BYTES) for index, upload in enumerate(files)}
        total = upload_store(IMPORT_RUNS, run=job, files=uploads, too_large=ImportJobError)
        audit_record(
            event="import.create",
            obj=job,
            actor=created_by,
            action=CREATE,
            data={"pool": pool.name, "files": names, "kind": kind, "bytes": total},
        )
        transaction.on_commit(lambda: import_job_dispatch(job_id=job.pk))
    return job


def import_job_dispatch(*, job_id: int, restart: bool = False) -> None:
    """Hand a committed import job to whoever runs it: a Celery worker, or a thread here without a broker. `restart`
    runs it again from its stored files when a stopped process left it reading or writing."""

    def send() -> None:
        from annotation.tasks import import_job_run_task

        import_job_run_task.delay(job_id, restart=restart)

    run_dispatch(IMPORT_RUNS, run_id=job_id, restart=restart, run=import_job_run, send=send)


def import_job_cancel(*, job: ImportJob, user=None) -> None:
    """Stop a queued or running import for good, its stored files deleted: it stops at its next batch, and the rows
    it committed before stay in the pool (UploadRunStateError when it has ended)."""
    run_cancel(IMPORT_RUNS, run_id=job.pk, user=user, event="import.cancel")


def imports_requeue_stale() -> list[int]:
    """Queue again the imports left reading or writing by a runner that is gone (the workers' sweeper calls this)."""
    return runs_requeue_stale(IMPORT_RUNS, dispatch=import_job_dispatch)


def imports_resume(*, foreground: bool) -> list[dict]:
    """`resume_jobs`: the imports left queued, or reading or writing by a runner that is gone, run again: here, to
    their end (`foreground`, no broker), or queued for the workers. An import whose runner is alive is left to it."""
    resumed = []
    for job_id in runs_to_resume(IMPORT_RUNS):
        if foreground:
            import_job_run(job_id=job_id, restart=True)
        else:
            import_job_dispatch(job_id=job_id, restart=True)
        job = ImportJob.objects.get(pk=job_id)
        resumed.append({"import": job_id, "status": job.status, "rows_written": job.rows_written})
    return resumed


def imports_resume_on_start(*, started_before: datetime) -> list[int]:
    """On the embedded default, run again the imports an earlier process left queued, reading or writing (each in a
    thread of its own, as a new import runs); returns their ids. Only jobs created before this server started: no
    import of this server's own can be among them."""
    return runs_left_unfinished(IMPORT_RUNS, started_before=started_before, dispatch=import_job_dispatch)


__all__ = [
    "ImportJobError",
    "import_job_cancel",
    "import_job_create",
    "import_job_dispatch",
    "import_job_progress",
    "import_job_run",
    "imports_requeue_stale",
    "imports_resume",
    "imports_resume_on_start",
]
