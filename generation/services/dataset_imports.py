"""Templates datasets uploaded on the datasets page (docs/domain.md, 'Your own templates'): a small upload is imported
in the request; a large one (`upload_is_large`: more instances than a request should write) runs in the
background, as a pool's imports and the generation jobs do. The request stores the files in the database
(`DatasetImportFile`, 1 MiB pieces, for a worker on another machine) and answers at once; a Celery worker
(production) or a thread of the web process (the embedded default, no broker) runs `dataset_import_run`, and the
datasets page shows its progress and its `FILE:LINE: field` errors. The import checks every line before it writes
and writes in one transaction: nothing is half-written, and a run taken over after its runner died starts again. An
admin may cancel a queued or running import: it writes nothing. The storing, the lease, the sweep and the cancel are
a pool import's too (generation/services/upload_runs.py).

This module stores, queues and sweeps an import; generation/services/dataset_import_run.py runs it (the Celery
task imports only that one).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from common.audit import CREATE, audit_record
from common.errors import ServiceError
from generation.datasets.templates import upload_name
from generation.models import DatasetImport
from generation.services.dataset_import_run import DATASET_IMPORT_RUNS, dataset_import_run
from generation.services.upload_runs import (
    run_cancel,
    run_dispatch,
    runs_left_unfinished,
    runs_requeue_stale,
    runs_to_resume,
    upload_store,
)

THREAD_PREFIX = DATASET_IMPORT_RUNS.thread_prefix  # tests/conftest.py lets threads named concord-job-* finish
# An upload whose instances (template lines x codebook families x name draws, counted from the files' lines) pass
# this is imported in the background: a large file outlived the HTTP timeout (benchmarks/README.md, "Imports and bundles").
INLINE_INSTANCES_MAX = 50_000


class DatasetImportError(ServiceError, ValueError):
    """The upload cannot be queued (too large); nothing was written."""


def _lines(upload) -> int:
    """Non-blank lines of an uploaded file (read through; Django's uploads read again from the start)."""
    count = 0
    tail = b""
    for piece in upload.chunks():
        lines = (tail + piece).split(b"\n")
        tail = lines.pop()
        count += sum(1 for line in lines if line.strip())
    return count + (1 if tail.strip() else 0)


def upload_is_large(*, codebook, templates, names, names_per_template: int) -> bool:
    """Whether the upload would write more instances than a request should (INLINE_INSTANCES_MAX), estimated from
    its lines: templates (less a CSV header) x families (codebook rows) x name draws."""
    jsonl = str(getattr(templates, "name", "")).lower().endswith(".jsonl")
    template_lines = max(_lines(templates) - (0 if jsonl else 1), 0)
    families = max(_lines(codebook) - 1, 1)
    draws = names_per_template if names is not None else 1
    return template_lines * families * draws > INLINE_INSTANCES_MAX


def dataset_import_create(
    *, name: str, codebook, templates, names=None, names_per_template: int, seed: int, created_by=None
) -> DatasetImport:
    """Store the uploaded files and queue their import; it runs once this transaction commits."""
    uploads = {"codebook": codebook, "templates": templates, **({"names": names} if names is not None else {})}
    defaults = {"codebook": "codebook.csv", "templates": "templates.csv", "names": "names.txt"}
    file_names = {key: upload_name(upload, defaults[key]) for key, upload in uploads.items()}
    with transaction.atomic():
        job = DatasetImport.objects.create(
            name=name,
            names_per_template=names_per_template,
            seed=seed,
            file_names=file_names,
            created_by=created_by,
        )
        files = {key: upload.chunks() for key, upload in uploads.items()}
        total = upload_store(DATASET_IMPORT_RUNS, run=job, files=files, too_large=DatasetImportError)
        audit_record(
            event="dataset.import",
            obj=job,
            actor=created_by,
            action=CREATE,
            data={"dataset": name, "files": list(file_names.values()), "bytes": total},
        )
        transaction.on_commit(lambda: dataset_import_dispatch(job_id=job.pk))
    return job


def dataset_import_dispatch(*, job_id: int, restart: bool = False) -> None:
    """Hand a committed import to whoever runs it: a Celery worker, or a thread here without a broker."""

    def send() -> None:
        from generation.tasks import dataset_import_run_task

        dataset_import_run_task.delay(job_id, restart=restart)

    run_dispatch(DATASET_IMPORT_RUNS, run_id=job_id, restart=restart, run=dataset_import_run, send=send)


def dataset_import_cancel(*, job_id: int, user=None) -> None:
    """Stop a queued, checking or writing import for good, its stored files deleted: it writes nothing (its write is
    one transaction, rolled back). UploadRunStateError when it has ended."""
    run_cancel(DATASET_IMPORT_RUNS, run_id=job_id, user=user, event="dataset.import.cancel")


def dataset_imports_requeue_stale() -> list[int]:
    """Queue again the imports left checking or writing by a runner that is gone (the workers' sweeper)."""
    return runs_requeue_stale(DATASET_IMPORT_RUNS, dispatch=dataset_import_dispatch)


def dataset_imports_resume(*, foreground: bool) -> list[dict]:
    """`resume_jobs`: the imports left queued, or checking or writing by a runner that is gone, run again."""
    resumed = []
    for job_id in runs_to_resume(DATASET_IMPORT_RUNS):
        if foreground:
            dataset_import_run(job_id=job_id, restart=True)
        else:
            dataset_import_dispatch(job_id=job_id, restart=True)
        job = DatasetImport.objects.get(pk=job_id)
        resumed.append({"import": f"dataset-{job_id}", "status": job.status, "instances": job.instances_written})
    return resumed


def dataset_imports_resume_on_start(*, started_before: datetime) -> list[int]:
    """On the embedded default, run again the imports an earlier process left unfinished."""
    return runs_left_unfinished(DATASET_IMPORT_RUNS, started_before=started_before, dispatch=dataset_import_dispatch)
