"""The `pool_import` job kind (generation/jobs/uploads.py): generation files imported into a pool from the browser or
the API (docs/domain.md, "The annotation pool"), in the background, with every job's chunks, lease, heartbeat,
cancel, sweep and resume. Its input is the uploaded files (generation/jobs/inputs.py, named by their index), read
back as a stream; its row is a `PoolImport`. `generations_import` reads every row (phase "reading"), then writes in
short transactions batch by batch (phase "writing"): a run taken over after its runner died recognises the rows
already in the pool by content and writes the rest, each once; a cancel stops it before its next batch, the batches
it committed staying in the pool. Rows written per batch are kept in the cache rather than written per batch.
annotation/services/imports/jobs.py creates, cancels and shows one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django.conf import settings
from django.core.cache import cache

from annotation.models import PoolImport
from annotation.services.imports import GenerationImportError, Stored, generations_import
from annotation.services.preview import stored_codebook
from generation.jobs.inputs import job_input_file
from generation.jobs.progress import JobStopped, job_phase
from generation.jobs.uploads import UploadKind
from generation.models import Job

POOL_IMPORT_KIND = "pool_import"
READING, WRITING = "reading", "writing"


def progress_key(job_id: int) -> str:
    return f"concord:import-job:{job_id}:written"


class PoolImportKind(UploadKind):
    model = PoolImport
    failed = GenerationImportError
    stopped = "the import stopped"
    first_phase = READING

    @property
    def queue(self) -> str | None:  # type: ignore[override]
        """The default queue, as before: a pool's import does not wait behind the generation workers' model runs."""
        return str(settings.CELERY_TASK_DEFAULT_QUEUE)

    def work(self, *, job: Job, row: Any, stop: Callable[[], bool]) -> dict[str, Any]:
        job_phase(job_id=job.pk, phase=READING)
        rows = PoolImport.objects.filter(pk=job.pk)
        rows.update(rows_read=0, rows_written=0)  # what an earlier try counted

        def progress(phase: str, done: int, total: int) -> None:
            if stop():
                raise JobStopped  # a cancelled import writes no further batch
            if phase == "reading":
                rows.update(rows_read=done)
            elif phase == "checked":
                rows.update(rows_read=done)
                job_phase(job_id=job.pk, phase=WRITING)
            else:  # per batch: kept in the cache rather than a write of the import's row per batch
                cache.set(progress_key(job.pk), done, timeout=3600)

        sources = [
            Stored(name=name, open=partial(job_input_file, job_id=job.pk, name=str(index)))
            for index, name in enumerate(row.file_names)
        ]
        result = generations_import(
            paths=sources, pool_name=row.pool.name, kind=row.kind, created_by=job.created_by, progress=progress,
            labels=row.options.get("labels"), positive=row.options.get("positive", ""),
            codebook=stored_codebook(row.options.get("codebook")), scale=row.options.get("scale"),
            positive_at_least=row.options.get("positive_at_least"),
        )  # fmt: skip
        return {
            "rows_read": result.rows,
            "rows_written": result.rows,
            "items_created": result.items,
            "heuristic_mismatches": result.heuristic_mismatches,
        }

    def row(self, *, job_id: int) -> Any:
        return PoolImport.objects.select_related("pool").get(pk=job_id)

    def describe(self, *, job: Job) -> str:
        row = PoolImport.objects.select_related("pool").filter(pk=job.pk).first()
        return f"import into pool {row.pool.name if row else '?'}"

    def resume_entry(self, *, job: Job) -> dict[str, Any]:
        row = PoolImport.objects.get(pk=job.pk)
        return {"import": job.pk, "status": self.status(job=job), "rows_written": row.rows_written}
