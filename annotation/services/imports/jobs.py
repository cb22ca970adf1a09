"""Imports from the browser and the API run as background jobs of the `pool_import` kind (docs/domain.md, "The
annotation pool"; annotation/services/imports/import_kind.py), as generation jobs do: the request stores the files
as the job's input and answers at once; a Celery worker (production, the default queue) or a thread of the web
process (the embedded default, no broker) runs `generations_import` on them under the job's chunk lease. Running an
import twice is safe: rows already in the pool are recognised by content and skipped. Its runner dying leaves the
lease to expire; the workers' sweeper, `resume_jobs` and the embedded default's next start run it again
(generation/jobs/, 'Crash recovery').
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from django.core.cache import cache

from annotation.models import PoolImport
from annotation.services.imports import KINDS
from annotation.services.imports.import_kind import POOL_IMPORT_KIND, WRITING, PoolImportKind, progress_key
from common.audit import CREATE, audit_record
from common.errors import ServiceError
from generation.jobs import inputs
from generation.jobs.inputs import job_input_store
from generation.jobs.progress import ACTIVE
from generation.jobs.services import JobStateError, job_cancel, job_submit
from generation.models import Job, JobStatus

THREAD_PREFIX = "concord-job-"  # the job threads without a broker (tests/conftest.py lets them finish)
KIND = PoolImportKind()


class UploadedFile(Protocol):
    name: str | None

    def chunks(self, chunk_size: int | None = None) -> Iterable[bytes]: ...


class ImportJobError(ServiceError, ValueError):
    """The import cannot be queued (no files, too large, an unknown kind); nothing was written."""


def import_job_create(*, pool, kind: str, files: list[UploadedFile], created_by=None, options: dict | None = None):
    """Store the uploaded files and queue their import into `pool`; the job runs once this transaction commits.
    `options`: `labels`, `positive` and `codebook` ({"name", "text"}) as `import_generations` takes them (checked by
    the caller: annotation/services/preview.py's `generation_options`). Returns the import's `PoolImport` row
    (its pk is its job's)."""
    if kind not in KINDS:
        raise ImportJobError(f"unknown item kind {kind!r}: use one of {', '.join(KINDS)}")
    if not files:
        raise ImportJobError("no file was sent")
    names = [str(upload.name or f"file-{index + 1}.csv").replace("\x00", "") for index, upload in enumerate(files)]
    rows: list[PoolImport] = []

    def write(job: Job) -> None:
        uploads = {str(index): upload.chunks(inputs.PIECE_BYTES) for index, upload in enumerate(files)}
        total = job_input_store(job=job, files=uploads, too_large=ImportJobError)
        row = PoolImport.objects.create(
            job=job, pool=pool, kind=kind, file_names=names, bytes_total=total, options=dict(options or {})
        )
        rows.append(row)
        audit_record(
            event="import.create",
            obj=row,
            actor=created_by,
            action=CREATE,
            data={"pool": pool.name, "files": names, "kind": kind, "bytes": total},
        )

    job_submit(kind=POOL_IMPORT_KIND, created_by=created_by, write=write)
    return rows[0]


def import_job_cancel(*, job: PoolImport, user=None) -> None:
    """Stop a queued or running import for good, its stored files deleted: it stops at its next batch, and the rows
    it committed before stay in the pool (JobStateError when it has ended)."""
    run = Job.objects.get(pk=job.pk)
    try:
        job_cancel(job=run, user=user, event="import.cancel", audited=job)
    except JobStateError:
        run.refresh_from_db()
        status = KIND.status(job=run) if run.status not in ACTIVE else "ending"
        raise JobStateError(f"import job {job.pk} is {status}; only a queued or running one can be cancelled") from None


def import_job_progress(*, job: PoolImport) -> dict:
    """The import's state for the pages and the API: status, rows read and written, and its outcome once it ended."""
    run = job.job
    status = KIND.status(job=run)
    written = job.rows_written
    if status == WRITING:
        cached = cache.get(progress_key(job.pk))
        if cached is not None:
            written = int(cached)
    errors, error_count = KIND.errors(job=run, row=job)
    return {
        "id": job.pk,
        "pool": job.pool.name,
        "kind": job.kind,
        "status": status,
        "files": list(job.file_names),
        "bytes": job.bytes_total,
        "rows_read": job.rows_read,
        "rows_written": written,
        "items_created": job.items_created,
        "already_imported": job.rows_read - job.items_created if status == JobStatus.DONE else 0,
        "heuristic_mismatches": job.heuristic_mismatches,
        "errors": errors,
        "error_count": error_count,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
    }


__all__ = ["ImportJobError", "import_job_cancel", "import_job_create", "import_job_progress"]
