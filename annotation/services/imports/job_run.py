"""Running a stored import job (annotation/services/imports/jobs.py stores, queues and sweeps it): its files are read
back from the database as a stream, `generations_import` runs on them under a lease renewed by a heartbeat, and the
job's row tells how far it got and how it ended. `annotation.tasks` imports this module to run a job; the module that
queues the task is jobs.py, so the two never import each other.
"""

from __future__ import annotations

import io
import logging
from datetime import timedelta
from functools import partial
from typing import BinaryIO

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import ImportFileChunk, ImportJob
from annotation.services.imports import GenerationImportError, Stored, generations_import
from annotation.services.preview import stored_codebook
from generation.jobs.leases import Heartbeat, lease_owner_gone, lease_owner_new, lease_seconds

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
RUNNING = (ImportJob.READING, ImportJob.WRITING)


class _LeaseLost(Exception):
    """Another runner took the import over (ours had expired): this one stops at its next batch."""


def _claim(*, job_id: int, owner: str, restart: bool) -> bool:
    """Take the job with a lease: a queued one; with `restart`, also one left reading or writing whose lease is free,
    expired, or held by a process gone from this host. One UPDATE each, so two runners never both win."""
    now = timezone.now()
    fields = {
        "status": ImportJob.READING,
        "started_at": now,
        "rows_read": 0,
        "rows_written": 0,
        "lease_owner": owner,
        "lease_expires_at": now + timedelta(seconds=lease_seconds()),
    }
    jobs = ImportJob.objects.filter(pk=job_id)
    if jobs.filter(status=ImportJob.QUEUED).update(**fields):
        return True
    if not restart:
        return False
    running = jobs.filter(status__in=RUNNING)
    if running.filter(Q(lease_owner="") | Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)).update(
        **fields
    ):
        return True
    holder = running.values_list("lease_owner", flat=True).first()
    if holder and lease_owner_gone(holder):
        logger.info("import job %s: its runner %s is gone; taking it over", job_id, holder)
        return bool(running.filter(lease_owner=holder).update(**fields))
    return False


def import_job_run(*, job_id: int, restart: bool = False) -> ImportJob | None:
    """Run a queued import job here, under a lease renewed by a heartbeat. A job that another live runner holds or
    that has ended is left alone (a task delivered twice); the job's row says how far it got, then how it ended.

    `restart` also takes a job left reading or writing by a runner that is gone (killed, or its worker lost: its lease
    expired): its files are kept until it ends, and the rows it committed (the import writes in short transactions)
    are recognised and skipped, so it writes the rest, each once.
    """
    owner = lease_owner_new()
    if not _claim(job_id=job_id, owner=owner, restart=restart):
        return None
    job = ImportJob.objects.select_related("pool").get(pk=job_id)
    sources = [Stored(name=name, open=partial(_stored, job_id, index)) for index, name in enumerate(job.file_names)]
    ours = ImportJob.objects.filter(pk=job_id, lease_owner=owner)

    with Heartbeat(chunk_id=job_id, owner=owner, model=ImportJob) as beat:

        def progress(phase: str, done: int, total: int) -> None:
            if beat.lost.is_set():
                raise _LeaseLost
            if phase == "reading":
                ours.update(rows_read=done)
            elif phase == "checked":
                ours.update(rows_read=done, status=ImportJob.WRITING)
            else:  # per batch: kept in the cache rather than a write of the job's row per batch
                from django.core.cache import cache

                cache.set(_progress_key(job_id), done, timeout=3600)

        try:
            result = generations_import(
                paths=sources, pool_name=job.pool.name, kind=job.kind, created_by=job.created_by, progress=progress,
                labels=job.options.get("labels"), positive=job.options.get("positive", ""),
                codebook=stored_codebook(job.options.get("codebook")),
            )  # fmt: skip
        except _LeaseLost:
            logger.warning("import job %s: another runner took it over; this one stops", job_id)
        except GenerationImportError as exc:
            import_job_finish(job_id=job_id, owner=owner, status=ImportJob.FAILED, errors=exc.errors)
        except Exception as exc:
            logger.exception("import job %s failed", job_id)
            import_job_finish(
                job_id=job_id,
                owner=owner,
                status=ImportJob.FAILED,
                errors=[f"the import stopped: {type(exc).__name__}: {exc}"],
            )
        else:
            import_job_finish(
                job_id=job_id,
                owner=owner,
                status=ImportJob.DONE,
                rows_read=result.rows,
                rows_written=result.rows,
                items_created=result.items,
                heuristic_mismatches=result.heuristic_mismatches,
            )
    return ImportJob.objects.get(pk=job_id)


def import_job_finish(
    *, job_id: int, status: str, owner: str | None = None, errors: list[str] | None = None, **counts: int
) -> None:
    """End the job (and free its lease); with `owner`, only while that runner still holds it."""
    errors = errors or []
    with transaction.atomic():
        rows = ImportJob.objects.filter(pk=job_id)
        if owner is not None:
            rows = rows.filter(lease_owner=owner)
        ended = rows.update(
            status=status,
            errors=errors[:ERRORS_KEPT],
            error_count=len(errors),
            finished_at=timezone.now(),
            lease_owner="",
            lease_expires_at=None,
            **counts,
        )
        if ended:
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
