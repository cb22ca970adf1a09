"""Templates datasets uploaded on the datasets page (docs/domain.md, 'Your own templates'): a small upload is imported
in the request; a large one (`upload_is_large`: more instances than a request should write) runs in the
background, as a pool's imports and the generation jobs do. The request stores the files in the database
(`DatasetImportFile`, 1 MiB pieces, for a worker on another machine) and answers at once; a Celery worker
(production) or a thread of the web process (the embedded default, no broker) runs `dataset_import_run`, and the
datasets page shows its progress and its `FILE:LINE: field` errors. The import checks every line before it writes
and writes in one transaction: nothing is half-written, and a run taken over after its runner died starts again.

This module stores, queues and sweeps an import; generation/services/dataset_import_run.py runs it (the Celery
task imports only that one).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from common.audit import CREATE, audit_record
from generation.datasets.templates import upload_name
from generation.jobs.leases import chunk_lease_stale, lease_seconds
from generation.models import DatasetImport, DatasetImportFile
from generation.services.dataset_import_run import (
    PIECE_BYTES,
    RUNNING,
    UNFINISHED,
    dataset_import_finish,
    dataset_import_run,
)

logger = logging.getLogger(__name__)

THREAD_PREFIX = "concord-job-dataset-import-"  # tests/conftest.py lets threads named concord-job-* finish
# An upload whose instances (template lines x codebook families x name draws, counted from the files' lines) pass
# this is imported in the background: 100,000 lines outlived a 60 s HTTP timeout.
INLINE_INSTANCES_MAX = 50_000


class DatasetImportError(ValueError):
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
    limit = settings.CONCORD_MAX_UPLOAD_MB * 1024 * 1024
    with transaction.atomic():
        job = DatasetImport.objects.create(
            name=name,
            names_per_template=names_per_template,
            seed=seed,
            file_names=file_names,
            created_by=created_by,
        )
        total = 0
        for key, upload in uploads.items():
            buffer = bytearray()
            seq = 0
            for chunk in upload.chunks():
                buffer += chunk
                total += len(chunk)
                if total > limit:
                    raise DatasetImportError(
                        f"the files are larger than MAX_UPLOAD_MB ({settings.CONCORD_MAX_UPLOAD_MB} MB) in all"
                    )
                while len(buffer) >= PIECE_BYTES:
                    DatasetImportFile.objects.create(job=job, key=key, seq=seq, data=bytes(buffer[:PIECE_BYTES]))
                    del buffer[:PIECE_BYTES]
                    seq += 1
            if buffer or seq == 0:
                DatasetImportFile.objects.create(job=job, key=key, seq=seq, data=bytes(buffer))
        DatasetImport.objects.filter(pk=job.pk).update(bytes_total=total)
        job.bytes_total = total
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
    if settings.CELERY_TASK_ALWAYS_EAGER:

        def run() -> None:
            try:
                dataset_import_run(job_id=job_id, restart=restart)
            finally:
                connections.close_all()

        threading.Thread(target=run, name=f"{THREAD_PREFIX}{job_id}", daemon=True).start()
        return
    from generation.tasks import dataset_import_run_task

    try:
        dataset_import_run_task.delay(job_id, restart=restart)
    except Exception as exc:  # the broker is down: say so on the import rather than leave it queued for ever
        logger.error("dataset import %s: publishing failed: %s: %s", job_id, type(exc).__name__, exc)
        if not restart:
            dataset_import_finish(
                job_id=job_id,
                status=DatasetImport.FAILED,
                errors=[f"the task queue could not be reached ({exc}); nothing written, upload again"],
            )


def _stale(job: DatasetImport, *, now: datetime) -> bool:
    if not job.lease_owner:
        return job.lease_expires_at is None or job.lease_expires_at < now
    return chunk_lease_stale(job, now=now)  # type: ignore[arg-type]  # the same lease columns as a chunk's


def dataset_imports_requeue_stale() -> list[int]:
    """Queue again the imports left checking or writing by a runner that is gone (the workers' sweeper)."""
    now = timezone.now()
    taken = []
    for job in DatasetImport.objects.filter(status__in=RUNNING).only("pk", "status", "lease_owner", "lease_expires_at"):
        if not _stale(job, now=now):
            continue
        freed = DatasetImport.objects.filter(
            pk=job.pk, status=job.status, lease_owner=job.lease_owner, lease_expires_at=job.lease_expires_at
        ).update(lease_owner="", lease_expires_at=now + timedelta(seconds=lease_seconds() * 4))
        if freed:
            taken.append(job.pk)
    for job_id in taken:
        logger.warning("dataset import %s: its runner is gone; queued again", job_id)
        dataset_import_dispatch(job_id=job_id, restart=True)
    return taken


def dataset_imports_resume(*, foreground: bool) -> list[dict]:
    """`resume_jobs`: the imports left queued, or checking or writing by a runner that is gone, run again."""
    now = timezone.now()
    jobs = DatasetImport.objects.filter(status__in=UNFINISHED).order_by("created_at", "pk")
    job_ids = [job.pk for job in jobs if job.status == DatasetImport.QUEUED or _stale(job, now=now)]
    resumed = []
    for job_id in job_ids:
        if foreground:
            dataset_import_run(job_id=job_id, restart=True)
        else:
            dataset_import_dispatch(job_id=job_id, restart=True)
        job = DatasetImport.objects.get(pk=job_id)
        resumed.append({"import": f"dataset-{job_id}", "status": job.status, "instances": job.instances_written})
    return resumed


def dataset_imports_resume_on_start(*, started_before: datetime) -> list[int]:
    """On the embedded default, run again the imports an earlier process left unfinished."""
    job_ids = list(
        DatasetImport.objects.filter(status__in=UNFINISHED, created_at__lt=started_before)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for job_id in job_ids:
        logger.warning("restarting dataset import %s, left unfinished by an earlier process", job_id)
        dataset_import_dispatch(job_id=job_id, restart=True)
    return job_ids
