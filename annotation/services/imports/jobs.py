"""Imports from the browser and the API run as background jobs (docs/domain.md, "The annotation pool"), as generation
jobs do: the request stores the files and answers at once; a Celery worker (production) or a thread of the web
process (the embedded default, no broker) runs `generations_import` and keeps the job's row up to date.

The files are stored in the database (`ImportFileChunk`, 1 MiB each) rather than on a disk the worker may not
share, and read back as a stream; they are deleted when the job ends. Running a job twice is safe: rows already in
the pool are recognised by content and skipped.
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterable
from datetime import datetime
from functools import partial
from typing import BinaryIO, Protocol

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from annotation.models import ImportFileChunk, ImportJob, Pool
from annotation.services.imports import KINDS, GenerationImportError, Stored, generations_import
from common.audit import CREATE, audit_record

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20
ERRORS_KEPT = 200  # of a failed import's FILE:LINE messages, the first ones are kept on the job
THREAD_PREFIX = "concord-job-import-"  # tests/conftest.py lets threads named concord-job-* finish with their test


class UploadedFile(Protocol):
    name: str | None

    def chunks(self, chunk_size: int | None = None) -> Iterable[bytes]: ...


class ImportJobError(ValueError):
    """The import cannot be queued (no files, too large, an unknown kind); nothing was written."""


def max_upload_bytes() -> int:
    return settings.CONCORD_MAX_UPLOAD_MB * 1024 * 1024


def import_job_create(*, pool: Pool, kind: str, files: list[UploadedFile], created_by=None) -> ImportJob:
    """Store the uploaded files and queue their import into `pool`; the job runs once this transaction commits."""
    if kind not in KINDS:
        raise ImportJobError(f"unknown item kind {kind!r}: use one of {', '.join(KINDS)}")
    if not files:
        raise ImportJobError("no file was sent")
    names = [str(upload.name or f"file-{index + 1}.csv").replace("\x00", "") for index, upload in enumerate(files)]
    with transaction.atomic():
        job = ImportJob.objects.create(pool=pool, kind=kind, file_names=names, created_by=created_by)
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
        import_job_run_task.delay(job_id)
    except Exception as exc:  # the broker is down: say so on the job rather than leave it queued for ever
        logger.error("import job %s: publishing failed: %s: %s", job_id, type(exc).__name__, exc)
        _finish(job_id, status=ImportJob.FAILED, errors=[f"the task queue could not be reached ({exc}); try again"])


class _StoredFile(io.RawIOBase):
    """One stored file of a job, read piece by piece from the database."""

    def __init__(self, job_id: int, file_index: int):
        self._ids = list(
            ImportFileChunk.objects.filter(job_id=job_id, file_index=file_index)
            .order_by("seq")
            .values_list("pk", flat=True)
        )
        self._piece = b""
        self._offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self._offset >= len(self._piece):
            if not self._ids:
                return 0
            self._piece = bytes(ImportFileChunk.objects.values_list("data", flat=True).get(pk=self._ids.pop(0)))
            self._offset = 0
        count = min(len(buffer), len(self._piece) - self._offset)
        buffer[:count] = self._piece[self._offset : self._offset + count]
        self._offset += count
        return count


def _stored(job_id: int, file_index: int) -> BinaryIO:
    return io.BufferedReader(_StoredFile(job_id, file_index), buffer_size=CHUNK_BYTES)


UNFINISHED = (ImportJob.QUEUED, ImportJob.READING, ImportJob.WRITING)


def import_job_run(*, job_id: int, restart: bool = False) -> ImportJob | None:
    """Run a queued import job here. A job that is already running or has ended is left alone (a task delivered
    twice); the job's row says how far it got, then how it ended.

    `restart` also takes a job left reading or writing by a process that stopped (killed, or its worker lost): the
    import is one transaction, so nothing of it was written, and its files are kept until it ends; it starts over.
    """
    claimed = ImportJob.objects.filter(pk=job_id, status__in=UNFINISHED if restart else [ImportJob.QUEUED]).update(
        status=ImportJob.READING, started_at=timezone.now(), rows_read=0, rows_written=0
    )
    if not claimed:
        return None
    job = ImportJob.objects.select_related("pool").get(pk=job_id)
    sources = [Stored(name=name, open=partial(_stored, job_id, index)) for index, name in enumerate(job.file_names)]

    def progress(phase: str, done: int, total: int) -> None:
        if phase == "reading":
            ImportJob.objects.filter(pk=job_id).update(rows_read=done)
        elif phase == "checked":
            ImportJob.objects.filter(pk=job_id).update(rows_read=done, status=ImportJob.WRITING)
        else:  # inside the import's transaction: the job's row would only change at its end, so the cache tells it
            from django.core.cache import cache

            cache.set(_progress_key(job_id), done, timeout=3600)

    try:
        result = generations_import(
            paths=sources, pool_name=job.pool.name, kind=job.kind, created_by=job.created_by, progress=progress
        )
    except GenerationImportError as exc:
        _finish(job_id, status=ImportJob.FAILED, errors=exc.errors)
    except Exception as exc:
        logger.exception("import job %s failed", job_id)
        _finish(job_id, status=ImportJob.FAILED, errors=[f"the import stopped: {type(exc).__name__}: {exc}"])
    else:
        _finish(
            job_id,
            status=ImportJob.DONE,
            rows_read=result.rows,
            rows_written=result.rows,
            items_created=result.items,
            heuristic_mismatches=result.heuristic_mismatches,
        )
    return ImportJob.objects.get(pk=job_id)


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


def _finish(job_id: int, *, status: str, errors: list[str] | None = None, **counts: int) -> None:
    errors = errors or []
    with transaction.atomic():
        ImportJob.objects.filter(pk=job_id).update(
            status=status,
            errors=errors[:ERRORS_KEPT],
            error_count=len(errors),
            finished_at=timezone.now(),
            **counts,
        )
        ImportFileChunk.objects.filter(job_id=job_id).delete()


def _progress_key(job_id: int) -> str:
    return f"concord:import-job:{job_id}:written"


def import_job_progress(*, job: ImportJob) -> dict:
    """The job's state for the pages and the API: status, rows read and written, and its outcome once it ended."""
    written = job.rows_written
    if job.status == ImportJob.WRITING:
        from django.core.cache import cache

        cached = cache.get(_progress_key(job.pk))
        if cached is not None:
            written = int(cached)
    return {
        "id": job.pk,
        "pool": job.pool.name,
        "kind": job.kind,
        "status": job.status,
        "files": list(job.file_names),
        "bytes": job.bytes_total,
        "rows_read": job.rows_read,
        "rows_written": written,
        "items_created": job.items_created,
        "already_imported": job.rows_read - job.items_created if job.status == ImportJob.DONE else 0,
        "heuristic_mismatches": job.heuristic_mismatches,
        "errors": list(job.errors),
        "error_count": job.error_count,
        "created_at": job.created_at,
        "finished_at": job.finished_at,
    }


__all__ = [
    "ImportJobError",
    "import_job_create",
    "import_job_dispatch",
    "import_job_progress",
    "import_job_run",
    "imports_resume_on_start",
    "max_upload_bytes",
]
