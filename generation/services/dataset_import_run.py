"""Running a stored templates-dataset upload (generation/services/dataset_imports.py stores, queues and sweeps it):
its files are read back from the database, `templates_pieces_import` checks every line and writes the dataset in one
transaction (a bad file, a stopped runner or a failure while writing leaves nothing behind), under a lease renewed
by a heartbeat, and the import's row tells how far it got and how it ended. `generation.tasks` imports this module to
run one; the module that queues the task is dataset_imports.py, so the two never import each other.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from generation.datasets.files import ImportFailed
from generation.datasets.templates import templates_pieces_import
from generation.jobs.leases import Heartbeat, lease_owner_gone, lease_owner_new, lease_seconds
from generation.models import DatasetImport, DatasetImportFile

logger = logging.getLogger(__name__)

PIECE_BYTES = 1 << 20  # the size of the stored pieces of an upload
ERRORS_KEPT = 200  # of a failed import's FILE:LINE messages, the first ones are kept
UNFINISHED = (DatasetImport.QUEUED, DatasetImport.CHECKING, DatasetImport.WRITING)
RUNNING = (DatasetImport.CHECKING, DatasetImport.WRITING)
PROGRESS_SECONDS = 6 * 3600


class _LeaseLost(Exception):
    """Another runner took the import over (ours had expired): this one stops, its transaction rolled back."""


def _pieces(job_id: int, key: str) -> Iterator[bytes]:
    ids = list(DatasetImportFile.objects.filter(job_id=job_id, key=key).order_by("seq").values_list("pk", flat=True))
    for pk in ids:
        yield bytes(DatasetImportFile.objects.values_list("data", flat=True).get(pk=pk))


def _claim(*, job_id: int, owner: str, restart: bool) -> bool:
    """Take the import with a lease: a queued one; with `restart`, also one left checking or writing whose lease is
    free, expired, or held by a process gone from this host. One UPDATE each, so two runners never both win."""
    now = timezone.now()
    fields = {
        "status": DatasetImport.CHECKING,
        "started_at": now,
        "lease_owner": owner,
        "lease_expires_at": now + timedelta(seconds=lease_seconds()),
    }
    jobs = DatasetImport.objects.filter(pk=job_id)
    if jobs.filter(status=DatasetImport.QUEUED).update(**fields):
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
        return bool(running.filter(lease_owner=holder).update(**fields))
    return False


def _progress_key(job_id: int, phase: str) -> str:
    return f"concord:dataset-import:{job_id}:{phase}"


def dataset_import_run(*, job_id: int, restart: bool = False) -> DatasetImport | None:
    """Run a queued import here. One another live runner holds, or that has ended, is left alone (a task delivered
    twice). `restart` also takes one left checking or writing by a runner that is gone: its files are kept until it
    ends and its writes were one transaction, so it starts again from the top."""
    owner = lease_owner_new()
    if not _claim(job_id=job_id, owner=owner, restart=restart):
        return None
    job = DatasetImport.objects.get(pk=job_id)
    ours = DatasetImport.objects.filter(pk=job_id, lease_owner=owner)
    for phase in ("checking", "writing"):
        cache.delete(_progress_key(job_id, phase))
    files = {key: (str(shown), _pieces(job_id, key)) for key, shown in job.file_names.items()}

    with Heartbeat(chunk_id=job_id, owner=owner, model=DatasetImport) as beat:

        def progress(phase: str, count: int) -> None:
            if beat.lost.is_set():
                raise _LeaseLost
            if phase == "checked":
                ours.update(status=DatasetImport.WRITING, instances_expected=count)
            else:  # per batch: kept in the cache (the writes are inside the import's transaction)
                cache.set(_progress_key(job_id, phase), count, timeout=PROGRESS_SECONDS)

        try:
            result = templates_pieces_import(
                name=job.name,
                files=files,
                names_per_template=job.names_per_template,
                seed=job.seed,
                progress=progress,
            )
        except _LeaseLost:
            logger.warning("dataset import %s: another runner took it over; this one stops", job_id)
        except ImportFailed as exc:
            dataset_import_finish(job_id=job_id, owner=owner, status=DatasetImport.FAILED, errors=exc.errors)
        except Exception as exc:
            logger.exception("dataset import %s failed", job_id)
            dataset_import_finish(
                job_id=job_id,
                owner=owner,
                status=DatasetImport.FAILED,
                errors=[f"the import stopped, nothing written: {type(exc).__name__}: {exc}"],
            )
        else:
            dataset_import_finish(
                job_id=job_id,
                owner=owner,
                status=DatasetImport.DONE,
                instances_expected=result.instances,
                instances_written=result.instances if result.created else 0,
                created_dataset=result.created,
            )
    return DatasetImport.objects.get(pk=job_id)


def dataset_import_finish(
    *, job_id: int, status: str, owner: str | None = None, errors: list[str] | None = None, **values
) -> None:
    """End the import (and free its lease), deleting its stored files; with `owner`, only while that runner holds
    it."""
    errors = errors or []
    with transaction.atomic():
        rows = DatasetImport.objects.filter(pk=job_id)
        if owner is not None:
            rows = rows.filter(lease_owner=owner)
        ended = rows.update(
            status=status,
            errors=errors[:ERRORS_KEPT],
            error_count=len(errors),
            finished_at=timezone.now(),
            lease_owner="",
            lease_expires_at=None,
            **values,
        )
        if ended:
            DatasetImportFile.objects.filter(job_id=job_id).delete()


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
    }
