"""A job's state as its chunks run: started, progress recounted from the rows, done, failed.

The lowest layer of the job services: chunks and jobs import it, it imports neither.
"""

from __future__ import annotations

import logging
import traceback

from django.db import transaction
from django.db.models import Count
from django.db.models.functions import Coalesce
from django.utils import timezone

from generation.models import Generation, GenerationJob, JobChunk, JobStatus, ProbResult
from generation.signals import job_finished

logger = logging.getLogger(__name__)

ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)


def job_start(*, job_id: int) -> None:
    """Mark a queued job running (the first chunk to start does it); the first start and this run's start are kept."""
    now = timezone.now()
    GenerationJob.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
        status=JobStatus.RUNNING,
        started_at=Coalesce("started_at", now),
        run_started_at=Coalesce("run_started_at", now),
    )


def job_progress_refresh(*, job_id: int) -> GenerationJob:
    """Recount progress from the stored rows (re-runs never double count); a running job with every row is done."""
    finished = False
    with transaction.atomic():
        job = GenerationJob.objects.select_for_update().get(pk=job_id)
        per_instance = len(job.settings) * job.samples
        generations = Generation.objects.filter(job=job)
        complete = generations.values("instance").annotate(n=Count("id")).filter(n=per_instance).values("instance")
        job.done_generations = generations.count()
        if job.dataset.kind == "tango":  # Prob-TANGO is per generation
            from generation.services.tango import tango_instances_done

            job.done_instances = tango_instances_done(job=job, complete=complete)
        else:
            job.done_instances = ProbResult.objects.filter(job=job, instance__in=complete).count()
        fields = ["done_generations", "done_instances"]
        # Done once every row is written and every chunk is marked finished: a chunk writes its last rows and then
        # marks itself, and a job seen as done must never have a chunk that a sweeper could still hand out again.
        if (
            job.status == JobStatus.RUNNING
            and job.done_instances == job.total_instances
            and job.done_generations == job.total_generations
            and not JobChunk.objects.filter(job=job, finished_at__isnull=True).exists()
        ):
            job.status = JobStatus.DONE
            job.finished_at = timezone.now()
            fields += ["status", "finished_at"]
            finished = True
        job.save(update_fields=fields)
    if finished:
        for receiver, response in job_finished.send_robust(sender=GenerationJob, job_id=job.pk):
            if isinstance(response, Exception):
                logger.error("job %s: job_finished receiver %r failed: %r", job.pk, receiver, response)
    return job


def job_fail(*, job_id: int, error: BaseException | str) -> None:
    """Record a failure with its traceback; a cancelled or finished job keeps its status. `resume_jobs` resumes it."""
    if isinstance(error, BaseException):
        error = "".join(traceback.format_exception(error))
    GenerationJob.objects.filter(pk=job_id, status__in=ACTIVE).update(
        status=JobStatus.FAILED, error=error, finished_at=timezone.now()
    )
