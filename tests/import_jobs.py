"""An import's state as the tests read it: the import's progress (what its page and API show) with its job's row
and its chunk's lease, for a pool's import (`PoolImport`) as for a templates dataset's."""

from __future__ import annotations

from types import SimpleNamespace

from generation.models import Job, JobChunk, JobStatus


def pool_import(pk: int | None = None) -> SimpleNamespace:
    """The pool import `pk` (the only one when None): its progress's keys, and its job's and chunk's columns."""
    from annotation.models import PoolImport
    from annotation.services.imports.jobs import import_job_progress

    rows = PoolImport.objects.select_related("job", "pool")
    row = rows.get() if pk is None else rows.get(pk=pk)
    chunk = JobChunk.objects.get(job_id=row.pk)
    return SimpleNamespace(
        **{
            **import_job_progress(job=row),
            "pk": row.pk,
            "row": row,
            "job": row.job,
            "lease_owner": chunk.lease_owner,
            "lease_expires_at": chunk.lease_expires_at,
            "file_names": row.file_names,
        }
    )


def pool_import_create(*, pool, status: str = JobStatus.QUEUED, phase: str = "", **values):
    """A pool import's job as a request and a runner leave it, without stored files (a page's or a test's row)."""
    from annotation.models import PoolImport
    from annotation.services.imports.import_kind import POOL_IMPORT_KIND

    job = Job.objects.create(kind=POOL_IMPORT_KIND, status=status, phase=phase, total_units=1, total_items=1)
    JobChunk.objects.create(job=job, index=0, unit_ids=[0])
    return PoolImport.objects.create(job=job, pool=pool, **values)


def import_left_running(pk: int, *, phase: str, started_at=None, created_at=None, owner: str = "", expires=None):
    """The import's job as a runner that stopped leaves it: running in `phase`, its chunk's lease as given."""
    values = {"status": JobStatus.RUNNING, "phase": phase}
    if started_at is not None:
        values |= {"started_at": started_at, "run_started_at": started_at}
    if created_at is not None:
        values["created_at"] = created_at
    Job.objects.filter(pk=pk).update(**values)
    JobChunk.objects.filter(job_id=pk).update(lease_owner=owner, lease_expires_at=expires)
