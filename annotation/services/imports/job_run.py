"""Running a stored import job (annotation/services/imports/jobs.py stores, queues and sweeps it): its files are read
back from the database as a stream, `generations_import` runs on them under a lease renewed by a heartbeat, and the
job's row tells how far it got and how it ended (generation/services/upload_runs.py, shared with a templates
dataset's upload). `annotation.tasks` imports this module to run a job; the module that queues the task is jobs.py,
so the two never import each other.
"""

from __future__ import annotations

from functools import partial

from django.core.cache import cache

from annotation.models import ImportFileChunk, ImportJob
from annotation.services.imports import GenerationImportError, Stored, generations_import
from annotation.services.preview import stored_codebook
from generation.services.upload_runs import RunLease, UploadRuns, run_under_lease, stored_file

IMPORT_RUNS = UploadRuns(
    model=ImportJob,
    pieces=ImportFileChunk,
    file_field="file_index",
    checking=ImportJob.READING,
    label="import job",
    thread_prefix="concord-job-import-",
    failed=GenerationImportError,
    stopped="the import stopped",
    unreachable="try again",
    claim_resets={"rows_read": 0, "rows_written": 0},
)
UNFINISHED = IMPORT_RUNS.unfinished
RUNNING = IMPORT_RUNS.running


def import_job_run(*, job_id: int, restart: bool = False) -> ImportJob | None:
    """Run a queued import job here, under a lease renewed by a heartbeat. A job that another live runner holds or
    that has ended is left alone (a task delivered twice); the job's row says how far it got, then how it ended.

    `restart` also takes a job left reading or writing by a runner that is gone (killed, or its worker lost: its lease
    expired): its files are kept until it ends, and the rows it committed (the import writes in short transactions)
    are recognised and skipped, so it writes the rest, each once. A cancelled job stops at its next batch; the rows
    it committed before stay in the pool.
    """

    def work(job: ImportJob, lease: RunLease) -> dict:
        def progress(phase: str, done: int, total: int) -> None:
            lease.check()
            if phase == "reading":
                lease.update(rows_read=done)
            elif phase == "checked":
                lease.update(rows_read=done, status=ImportJob.WRITING)
            else:  # per batch: kept in the cache rather than a write of the job's row per batch
                lease.confirm()  # a cancelled import writes no further batch
                cache.set(_progress_key(job_id), done, timeout=3600)

        sources = [
            Stored(name=name, open=partial(stored_file, IMPORT_RUNS, job_id, index))
            for index, name in enumerate(job.file_names)
        ]
        result = generations_import(
            paths=sources, pool_name=job.pool.name, kind=job.kind, created_by=job.created_by, progress=progress,
            labels=job.options.get("labels"), positive=job.options.get("positive", ""),
            codebook=stored_codebook(job.options.get("codebook")), scale=job.options.get("scale"),
            positive_at_least=job.options.get("positive_at_least"),
        )  # fmt: skip
        return {
            "rows_read": result.rows,
            "rows_written": result.rows,
            "items_created": result.items,
            "heuristic_mismatches": result.heuristic_mismatches,
        }

    return run_under_lease(IMPORT_RUNS, run_id=job_id, restart=restart, work=work)


def _progress_key(job_id: int) -> str:
    return f"concord:import-job:{job_id}:written"


def import_job_progress(*, job: ImportJob) -> dict:
    """The job's state for the pages and the API: status, rows read and written, and its outcome once it ended."""
    written = job.rows_written
    if job.status == ImportJob.WRITING:
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
