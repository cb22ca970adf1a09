"""Imports from the browser and the API run as background jobs (docs/domain.md, "The annotation pool"), as generation
jobs do: the request stores the files and answers at once; a Celery worker (production) or a thread of the web
process (the embedded default, no broker) runs `generations_import` and keeps the job's row up to date.

The files are stored in the database (`ImportFileChunk`, 1 MiB each) rather than on a disk the worker may not
share, and read back as a stream; they are deleted when the job ends. Running a job twice is safe: rows already in
the pool are recognised by content and skipped.

A running import holds a lease, as a generation chunk does (generation/jobs/leases.py): its runner's name and an
expiry that a heartbeat renews. When its worker dies, the lease expires and any Celery worker's sweeper queues the
import again (`imports_requeue_stale`, within a lease and a sweep, about a minute), rather than the broker's
redelivery after its visibility timeout (an hour); `resume_jobs` resumes such imports too (`imports_resume`).


This module stores, queues and sweeps a job; annotation/services/imports/job_run.py runs it (the Celery task imports
only that one, so the task and the module that queues it never import each other).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Protocol

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from annotation.models import ImportFileChunk, ImportJob, Pool
from annotation.services.imports import KINDS
from annotation.services.imports.job_run import (
    CHUNK_BYTES,
    RUNNING,
    UNFINISHED,
    import_job_finish,
    import_job_progress,
    import_job_run,
)
from common.audit import CREATE, audit_record
from generation.jobs.leases import chunk_lease_stale, lease_seconds

logger = logging.getLogger(__name__)

THREAD_PREFIX = "concord-job-import-"  # tests/conftest.py lets threads named concord-job-* finish with their test


class UploadedFile(Protocol):
    name: str | None

    def chunks(self, chunk_size: int | None = None) -> Iterable[bytes]: ...


class ImportJobError(ValueError):
    """The import cannot be queued (no files, too large, an unknown kind); nothing was written."""


def max_upload_bytes() -> int:
    return settings.CONCORD_MAX_UPLOAD_MB * 1024 * 1024


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
        total = 0
        for index, upload in enumerate(files):
            for seq, piece in enumerate(_pieces(upload.chunks(CHUNK_BYTES))):
                total += len(piece)
                if total > max_upload_bytes():
                    raise ImportJobError(
                        f"the files are larger than MAX_UPLOAD_MB ({settings.CONCORD_MAX_UPLOAD_MB} MB) in all"
                    )
                ImportFileChunk.objects.create(job=job, file_index=index, seq=seq, data=piece)
        ImportJob.objects.filter(pk=job.pk).update(bytes_total=total)
        job.bytes_total = total
        audit_record(
            event="import.create",
            obj=job,
            actor=created_by,
            action=CREATE,
            data={"pool": pool.name, "files": names, "kind": kind, "bytes": total},
        )
        transaction.on_commit(lambda: import_job_dispatch(job_id=job.pk))
    return job


def _pieces(chunks: Iterable[bytes]) -> Iterable[bytes]:
    """The upload's bytes again, in pieces of CHUNK_BYTES (Django hands them over in its own sizes)."""
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        while len(buffer) >= CHUNK_BYTES:
            yield bytes(buffer[:CHUNK_BYTES])
            del buffer[:CHUNK_BYTES]
    if buffer:
        yield bytes(buffer)


def import_job_dispatch(*, job_id: int, restart: bool = False) -> None:
    """Hand a committed import job to whoever runs it: a Celery worker, or a thread here without a broker. `restart`
    runs it again from its stored files when a stopped process left it reading or writing."""
    if settings.CELERY_TASK_ALWAYS_EAGER:

        def run() -> None:
            try:
                import_job_run(job_id=job_id, restart=restart)
            finally:
                connections.close_all()

        threading.Thread(target=run, name=f"{THREAD_PREFIX}{job_id}", daemon=True).start()
        return
    from annotation.tasks import import_job_run_task

    try:
        import_job_run_task.delay(job_id, restart=restart)
    except Exception as exc:  # the broker is down: say so on the job rather than leave it queued for ever
        logger.error("import job %s: publishing failed: %s: %s", job_id, type(exc).__name__, exc)
        if not restart:  # a restart keeps its files: the next sweep or `resume_jobs` sends it again
            import_job_finish(
                job_id=job_id,
                status=ImportJob.FAILED,
                errors=[f"the task queue could not be reached ({exc}); try again"],
            )


def _lease_stale(job: ImportJob, *, now: datetime) -> bool:
    """A running import whose runner is gone: its lease expired or its owner is a dead process of this host; or sent
    again by a sweeper (no owner) and still unclaimed when that wait ran out."""
    if not job.lease_owner:
        return job.lease_expires_at is None or job.lease_expires_at < now
    return chunk_lease_stale(job, now=now)  # type: ignore[arg-type]  # the same lease columns as a chunk's


def imports_requeue_stale() -> list[int]:
    """Queue again the imports left reading or writing by a runner that is gone (the workers' sweeper calls this).
    Each stale lease is freed by one UPDATE, so two sweepers never send the same import twice; the freed lease waits
    `lease_seconds() * 4` for the new runner's claim before it counts as stale again (the message was lost)."""
    now = timezone.now()
    taken = []
    for job in ImportJob.objects.filter(status__in=RUNNING).only("pk", "status", "lease_owner", "lease_expires_at"):
        if not _lease_stale(job, now=now):
            continue
        freed = ImportJob.objects.filter(
            pk=job.pk, status=job.status, lease_owner=job.lease_owner, lease_expires_at=job.lease_expires_at
        ).update(lease_owner="", lease_expires_at=now + timedelta(seconds=lease_seconds() * 4))
        if freed:
            taken.append(job.pk)
    for job_id in taken:
        logger.warning("import job %s: its runner is gone; queued again", job_id)
        import_job_dispatch(job_id=job_id, restart=True)
    return taken


def imports_resume(*, foreground: bool) -> list[dict]:
    """`resume_jobs`: the imports left queued, or reading or writing by a runner that is gone, run again: here, to
    their end (`foreground`, no broker), or queued for the workers. An import whose runner is alive is left to it."""
    now = timezone.now()
    jobs = ImportJob.objects.filter(status__in=UNFINISHED).order_by("created_at", "pk")
    job_ids = [job.pk for job in jobs if job.status == ImportJob.QUEUED or _lease_stale(job, now=now)]
    resumed = []
    for job_id in job_ids:
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
    job_ids = list(
        ImportJob.objects.filter(status__in=UNFINISHED, created_at__lt=started_before)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for job_id in job_ids:
        logger.warning("restarting import job %s, left unfinished by an earlier process", job_id)
        import_job_dispatch(job_id=job_id, restart=True)
    return job_ids


__all__ = [
    "ImportJobError",
    "import_job_create",
    "import_job_dispatch",
    "import_job_progress",
    "import_job_run",
    "imports_requeue_stale",
    "imports_resume",
    "imports_resume_on_start",
    "max_upload_bytes",
]
