"""Running a stored templates-dataset upload (generation/services/dataset_imports.py stores, queues and sweeps it):
its files are read back from the database, `templates_pieces_import` checks every line and writes the dataset in one
transaction (a bad file, a stopped runner, a cancel or a failure while writing leaves nothing behind), under a lease
renewed by a heartbeat (generation/services/upload_runs.py, shared with a pool's imports), and the import's row tells
how far it got and how it ended. `generation.tasks` imports this module to run one; the module that queues the task
is dataset_imports.py, so the two never import each other.
"""

from __future__ import annotations

from django.core.cache import cache

from generation.datasets.files import ImportFailed
from generation.datasets.templates import templates_pieces_import
from generation.models import DatasetImport, DatasetImportFile
from generation.services.upload_runs import RunLease, UploadRuns, run_under_lease, stored_pieces

DATASET_IMPORT_RUNS = UploadRuns(
    model=DatasetImport,
    pieces=DatasetImportFile,
    file_field="key",
    checking=DatasetImport.CHECKING,
    label="dataset import",
    thread_prefix="concord-job-dataset-import-",
    failed=ImportFailed,
    stopped="the import stopped, nothing written",
    unreachable="nothing written, upload again",
)
UNFINISHED = DATASET_IMPORT_RUNS.unfinished
PROGRESS_SECONDS = 6 * 3600


def _progress_key(job_id: int, phase: str) -> str:
    return f"concord:dataset-import:{job_id}:{phase}"


def dataset_import_run(*, job_id: int, restart: bool = False) -> DatasetImport | None:
    """Run a queued import here. One another live runner holds, or that has ended, is left alone (a task delivered
    twice). `restart` also takes one left checking or writing by a runner that is gone: its files are kept until it
    ends and its writes were one transaction, so it starts again from the top. A cancelled one stops at its next
    step, its transaction rolled back."""

    def work(job: DatasetImport, lease: RunLease) -> dict:
        def progress(phase: str, count: int) -> None:
            lease.check()
            if phase == "checked":
                lease.update(status=DatasetImport.WRITING, instances_expected=count)
            elif phase == "written":  # the last step inside the import's transaction
                lease.seal()
            else:  # per batch: kept in the cache (the writes are inside the import's transaction)
                if phase == "writing":
                    lease.confirm()  # a cancelled import stops here, its transaction rolled back
                cache.set(_progress_key(job_id, phase), count, timeout=PROGRESS_SECONDS)

        for phase in ("checking", "writing"):
            cache.delete(_progress_key(job_id, phase))
        files = {
            key: (str(shown), stored_pieces(DATASET_IMPORT_RUNS, job_id, key)) for key, shown in job.file_names.items()
        }
        result = templates_pieces_import(
            name=job.name, files=files, names_per_template=job.names_per_template, seed=job.seed, progress=progress
        )
        return {
            "instances_expected": result.instances,
            "instances_written": result.instances if result.created else 0,
            "created_dataset": result.created,
        }

    return run_under_lease(DATASET_IMPORT_RUNS, run_id=job_id, restart=restart, work=work)


def dataset_import_progress(*, job: DatasetImport) -> dict:
    """The import's state for the datasets page: status, what was checked and written, and its outcome."""
    checked = written = None
    if job.status == DatasetImport.CHECKING:
        checked = cache.get(_progress_key(job.pk, "checking"))
    if job.status == DatasetImport.WRITING:
        written = cache.get(_progress_key(job.pk, "writing"))
    if job.status == DatasetImport.DONE:
        written = job.instances_written
    return {
        "id": job.pk,
        "name": job.name,
        "status": job.status,
        "files": [job.file_names[key] for key in ("codebook", "templates", "names") if key in job.file_names],
        "bytes": job.bytes_total,
        "templates_checked": int(checked or 0),
        "instances_expected": job.instances_expected,
        "instances_written": int(written or 0),
        "created_dataset": job.created_dataset,
        "errors": list(job.errors),
        "error_count": job.error_count,
        "created_at": job.created_at,
        "finished_at": job.finished_at,
        "cancellable": job.status in UNFINISHED,
    }
