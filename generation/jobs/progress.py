"""A job's state as its chunks run: started, progress recounted from the rows, done, failed, queued again.

The layer of the job machinery (generation/jobs/) above kinds and leases: the chunk runner, the runner, the job
services and the kinds' modules import it, it imports none of them. A job's rows are written through
`job_rows_write`, so that nothing is written once the job is cancelled (docs/domain.md, 'Crash recovery': cancel is
final).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable

from django.db import transaction
from django.db.models.functions import Coalesce
from django.utils import timezone

from generation.jobs.inputs import job_input_delete
from generation.jobs.kinds import job_kind_handler
from generation.jobs.leases import chunk_lease_break
from generation.models import Job, JobChunk, JobStatus
from generation.signals import job_finished, jobs_changed

logger = logging.getLogger(__name__)

ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)


class JobStopped(Exception):
    """Raised inside a kind's chunk when `stop()` says True mid-step (cancelled, or the lease lost): what the step had
    not committed is rolled back, and the kind's `run_chunk` returns False."""


def job_start(*, job_id: int) -> None:
    """Mark a queued job running (the first chunk to start does it); the first start and this run's start are kept."""
    now = timezone.now()
    Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
        status=JobStatus.RUNNING,
        started_at=Coalesce("started_at", now),
        run_started_at=Coalesce("run_started_at", now),
    )


def job_progress_refresh(*, job_id: int) -> Job:
    """Recount progress from the stored rows (re-runs never double count); a running job with every row is done."""
    finished = False
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        job.done_units, job.done_items = job_kind_handler(job.kind).counts(job=job)
        fields = ["done_items", "done_units"]
        # Done once every row is written and every chunk is marked finished: a chunk writes its last rows and then
        # marks itself, and a job seen as done must never have a chunk that a sweeper could still hand out again.
        if (
            job.status == JobStatus.RUNNING
            and job.done_units == job.total_units
            and job.done_items == job.total_items
            and not JobChunk.objects.filter(job=job, finished_at__isnull=True).exists()
        ):
            job.status = JobStatus.DONE
            job.finished_at = timezone.now()
            fields += ["status", "finished_at"]
            finished = True
        job.save(update_fields=fields)
        jobs_changed.send(sender=Job, job_ids=[job.pk])
        if finished:
            job_input_delete(job_id=job.pk)
    if finished:
        for receiver, response in job_finished.send_robust(sender=Job, job_id=job.pk, kind=job.kind):
            if isinstance(response, Exception):
                logger.error("job %s: job_finished receiver %r failed: %r", job.pk, receiver, response)
    return job


def job_fail(*, job_id: int, error: BaseException | str) -> None:
    """Record a failure with its traceback; a cancelled or finished job keeps its status. `resume_jobs` resumes it."""
    if isinstance(error, BaseException):
        error = "".join(traceback.format_exception(error))
    with transaction.atomic():
        failed = Job.objects.filter(pk=job_id, status__in=ACTIVE).update(
            status=JobStatus.FAILED, error=error, finished_at=timezone.now(), phase=""
        )
        if failed:
            jobs_changed.send(sender=Job, job_ids=[job_id])
        kind = Job.objects.filter(pk=job_id).values_list("kind", flat=True).first()
        if failed and kind is not None and job_kind_handler(kind).failure_final:
            job_input_delete(job_id=job_id)  # never resumed: its input goes as it fails


def job_phase(*, job_id: int, phase: str, **values: object) -> None:
    """Note what a running job is doing now (its kind's word: reading, checking, writing); JobStopped when it is no
    longer running (cancelled meanwhile)."""
    if not Job.objects.filter(pk=job_id, status__in=ACTIVE).update(phase=phase, **values):
        raise JobStopped


def job_seal(*, job_id: int) -> None:
    """Inside the transaction of a kind's last write, before it commits: mark the job ended (`finished_at`), so
    that a cancel waits for the commit and then finds it ended; JobStopped (the write rolled back) when it was
    cancelled first."""
    if not Job.objects.filter(pk=job_id, status__in=ACTIVE).update(finished_at=timezone.now()):
        raise JobStopped


def job_rows_write(*, job_id: int, write: Callable[[], object]) -> bool:
    """Write a step's rows only while the job is queued or running, under a lock on the job's row: a cancel that
    committed first leaves the step unwritten (False), and a cancel that comes later waits for the write to end."""
    with transaction.atomic():
        active = Job.objects.select_for_update().filter(pk=job_id, status__in=ACTIVE).exists()
        if active:
            write()
    return active


def job_requeue(*, job: Job) -> Job:
    """Queue a job again from where its rows stop (inside the caller's transaction, the job's row locked): stale
    chunk leases are freed, the pace of the estimate restarts. Sending its chunks is the runner's business."""
    for chunk in JobChunk.objects.filter(job=job, finished_at__isnull=True).exclude(lease_owner=""):
        chunk_lease_break(chunk=chunk)
    JobChunk.objects.filter(job=job, finished_at__isnull=True).update(sent_at=None)
    # A resume is a run taken up again: a job that never ran since it was (re)queued, such as the demo's job queued
    # before the server's first start, is started, not resumed, however often a server starts it.
    if job.status != JobStatus.QUEUED or job.run_started_at is not None:
        job.resumes += 1
    job.status = JobStatus.QUEUED
    job.error = ""
    job.finished_at = None
    job.run_started_at = None
    job.run_done_at_start = job.done_items
    job.phase = ""
    job.save(
        update_fields=["status", "error", "finished_at", "run_started_at", "run_done_at_start", "resumes", "phase"]
    )
    jobs_changed.send(sender=Job, job_ids=[job.pk])
    return job
