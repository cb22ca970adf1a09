"""Templates datasets uploaded on the datasets page (docs/domain.md, 'Your own templates'): a small upload is imported
in the request; a large one (`upload_is_large`: more instances than a request should write) is a job of the
`dataset_import` kind (generation/jobs/dataset_import_kind.py), run in the background as the generation jobs are, with
their chunks, lease, cancel, sweep and resume. The request stores the files as the job's input (in the database, for
a worker on another machine) and answers at once; the datasets page shows its progress and its `FILE:LINE: field`
errors. The import checks every line before it writes and writes in one transaction: nothing is half-written, and a
run taken over after its runner died starts again. An admin may cancel a queued or running import: it writes
nothing.
"""

from __future__ import annotations

from django.core.cache import cache

from common.audit import CREATE, audit_record
from common.errors import ServiceError
from generation.datasets.templates import upload_name
from generation.jobs.dataset_import_kind import CHECKING, DATASET_IMPORT_KIND, WRITING, DatasetImportKind, progress_key
from generation.jobs.inputs import job_input_store
from generation.jobs.progress import ACTIVE
from generation.jobs.services import JobStateError, job_cancel, job_submit
from generation.models import DatasetUpload, Job, JobStatus

THREAD_PREFIX = "concord-job-"  # the job threads without a broker (tests/conftest.py lets them finish)
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
) -> DatasetUpload:
    """Store the uploaded files as a `dataset_import` job's input and queue it; it runs once this transaction
    commits. DatasetImportError (nothing written) when they are too large."""
    uploads = {"codebook": codebook, "templates": templates, **({"names": names} if names is not None else {})}
    defaults = {"codebook": "codebook.csv", "templates": "templates.csv", "names": "names.txt"}
    file_names = {key: upload_name(upload, defaults[key]) for key, upload in uploads.items()}
    rows: list[DatasetUpload] = []

    def write(job: Job) -> None:
        total = job_input_store(
            job=job, files={key: upload.chunks() for key, upload in uploads.items()}, too_large=DatasetImportError
        )
        rows.append(
            DatasetUpload.objects.create(
                job=job,
                name=name,
                names_per_template=names_per_template,
                seed=seed,
                file_names=file_names,
                bytes_total=total,
            )
        )
        audit_record(
            event="dataset.import",
            obj=job,
            actor=created_by,
            action=CREATE,
            data={"dataset": name, "files": list(file_names.values()), "bytes": total},
        )

    job_submit(kind=DATASET_IMPORT_KIND, created_by=created_by, write=write)
    return rows[0]


def dataset_import_cancel(*, job_id: int, user=None) -> None:
    """Stop a queued, checking or writing import for good, its stored files deleted: it writes nothing (its write is
    one transaction, rolled back). JobStateError when it has ended."""
    job = Job.objects.filter(pk=job_id, kind=DATASET_IMPORT_KIND).first()
    if job is None:
        raise JobStateError(f"no dataset import {job_id}")
    try:
        job_cancel(job=job, user=user, event="dataset.import.cancel")
    except JobStateError:
        job.refresh_from_db()
        status = KIND.status(job=job) if job.status not in ACTIVE else "ending"
        raise JobStateError(
            f"dataset import {job_id} is {status}; only a queued or running one can be cancelled"
        ) from None


KIND = DatasetImportKind()


def dataset_imports() -> list[DatasetUpload]:
    """The latest background uploads, newest first, with their jobs."""
    return list(DatasetUpload.objects.select_related("job").order_by("-job__created_at", "-pk")[:10])


def dataset_import_progress(*, job: DatasetUpload) -> dict:
    """The import's state for the datasets page: status, what was checked and written, and its outcome."""
    run = job.job
    status = KIND.status(job=run)
    checked = written = None
    if status == CHECKING:
        checked = cache.get(progress_key(run.pk, CHECKING))
    if status == WRITING:
        written = cache.get(progress_key(run.pk, WRITING))
    if status == JobStatus.DONE:
        written = job.instances_written
    errors, error_count = KIND.errors(job=run, row=job)
    return {
        "id": run.pk,
        "name": job.name,
        "status": status,
        "files": [job.file_names[key] for key in ("codebook", "templates", "names") if key in job.file_names],
        "bytes": job.bytes_total,
        "templates_checked": int(checked or 0),
        "instances_expected": job.instances_expected,
        "instances_written": int(written or 0),
        "created_dataset": job.created_dataset,
        "errors": errors,
        "error_count": error_count,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "cancellable": run.status in ACTIVE,
    }
