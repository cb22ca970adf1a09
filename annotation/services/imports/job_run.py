"""Running a stored import job (annotation/services/imports/jobs.py stores and queues it): its files are read back
from the database as a stream, `generations_import` runs on them, and the job's row tells how far it got and how it
ended. `annotation.tasks` imports this module to run a job; the module that queues the task is jobs.py, so the two
never import each other.
"""

from __future__ import annotations

import io
import logging
from functools import partial
from typing import BinaryIO

from django.db import transaction
from django.utils import timezone

from annotation.models import ImportFileChunk, ImportJob
from annotation.services.imports import GenerationImportError, Stored, generations_import

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20  # the size of the stored pieces of a job's files
ERRORS_KEPT = 200  # of a failed import's FILE:LINE messages, the first ones are kept on the job


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
        import_job_finish(job_id=job_id, status=ImportJob.FAILED, errors=exc.errors)
    except Exception as exc:
        logger.exception("import job %s failed", job_id)
        import_job_finish(
            job_id=job_id, status=ImportJob.FAILED, errors=[f"the import stopped: {type(exc).__name__}: {exc}"]
        )
    else:
        import_job_finish(
            job_id=job_id,
            status=ImportJob.DONE,
            rows_read=result.rows,
            rows_written=result.rows,
            items_created=result.items,
            heuristic_mismatches=result.heuristic_mismatches,
        )
    return ImportJob.objects.get(pk=job_id)


def import_job_finish(*, job_id: int, status: str, errors: list[str] | None = None, **counts: int) -> None:
    """End the job with `status` (its first ERRORS_KEPT errors and its counts) and delete its stored files."""
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
