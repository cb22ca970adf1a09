"""Running one chunk of a job, of any kind (generation/jobs/kinds.py).

The runner (`chunk_run`) is the same for every kind: it claims the chunk's lease (generation/jobs/leases.py), so
that it runs in one place at a time, keeps it with a heartbeat, hands the chunk to its kind's handler with a `stop`
that turns True once the job is cancelled or the lease lost (checked between batches), and marks the chunk finished.
A transient error (the database connection dropped, the broker out of reach) is retried here with a bounded backoff,
the chunk going on from its last written step; any other error fails the job, which `resume_jobs` can resume
(docs/domain.md, 'Crash recovery'). What a kind does with the chunk's units is its handler's business
(generation/jobs/generation_kind.py, judging/kinds.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings as django_settings
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError

from generation.jobs.kinds import job_kind_handler
from generation.jobs.leases import (
    Heartbeat,
    chunk_claim,
    chunk_finish,
    chunk_release,
    connections_reset,
    lease_owner_new,
)
from generation.jobs.progress import ACTIVE, job_fail, job_progress_refresh, job_start
from generation.models import Job, JobChunk

logger = logging.getLogger(__name__)

# Errors that say nothing about the chunk itself: the same chunk is tried again after a pause.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError, BrokerError, ConnectionError)

Progress = Callable[[Job], None]


def transient_delays() -> list[float]:
    """The pauses before each retry after a transient error: 1, 2, 4, 8, 16 s by default (bounded)."""
    retries = django_settings.CONCORD_TRANSIENT_RETRIES
    first = django_settings.CONCORD_TRANSIENT_BACKOFF_SECONDS
    return [min(first * 2**attempt, 60.0) for attempt in range(retries)]


def _still_active(job: Job) -> bool:
    return Job.objects.filter(pk=job.pk, status__in=ACTIVE).exists()


def chunk_run(*, chunk_id: int, progress: Progress | None = None) -> Job:
    """Run one chunk under its lease; skipped when its job is no longer queued or running, when it is finished, or
    when another live runner holds it. Transient errors are retried (`transient_delays`); a failure is recorded on
    the job and re-raised. `progress` is called with the job after each written step."""
    owner = lease_owner_new()
    delays = transient_delays()
    for attempt in range(len(delays) + 1):
        try:
            return _chunk_run_once(chunk_id=chunk_id, owner=owner, progress=progress)
        except TRANSIENT_ERRORS as exc:
            connections_reset()
            if attempt == len(delays):
                _give_up(chunk_id=chunk_id, owner=owner, error=exc)
                raise
            logger.warning(
                "chunk %s: transient error (%s: %s); retry %d of %d in %.0f s",
                chunk_id, type(exc).__name__, exc, attempt + 1, len(delays), delays[attempt],
            )  # fmt: skip
            _note_transient(chunk_id=chunk_id, error=exc)
            time.sleep(delays[attempt])
    raise AssertionError("unreachable")


def _chunk_run_once(*, chunk_id: int, owner: str, progress: Progress | None) -> Job:
    chunk = JobChunk.objects.select_related("job__model", "job__generation_run__dataset").get(pk=chunk_id)
    job = chunk.job
    if job.status not in ACTIVE or chunk.finished_at is not None:
        return job
    if not chunk_claim(chunk_id=chunk.pk, owner=owner):
        logger.info("chunk %s is finished or held by another live runner; skipped", chunk.pk)
        return job
    job_start(job_id=job.pk)
    handler = job_kind_handler(job.kind)
    try:
        with Heartbeat(chunk_id=chunk.pk, owner=owner) as heartbeat:

            def stop() -> bool:
                return heartbeat.lost.is_set() or not _still_active(job)

            finished = handler.run_chunk(
                job=job, chunk=chunk, stop=stop, step_done=lambda: _step_done(job_id=job.pk, progress=progress)
            )
            if not finished:
                chunk_release(chunk_id=chunk.pk, owner=owner)
                return job_progress_refresh(job_id=job.pk)
    except TRANSIENT_ERRORS:
        raise  # retried by chunk_run, which keeps the lease (same owner)
    except Exception as exc:
        chunk_release(chunk_id=chunk.pk, owner=owner)
        job_fail(job_id=job.pk, error=exc)
        raise
    chunk_finish(chunk_id=chunk.pk)
    try:
        handler.chunk_finished(job=job, unit_ids=list(chunk.unit_ids))
    except Exception:
        logger.exception("chunk %s: the %s kind's chunk_finished failed", chunk.pk, job.kind)
    return job_progress_refresh(job_id=job.pk)  # `progress` heard of the last step already


def _step_done(*, job_id: int, progress: Progress | None) -> None:
    _report(job_id=job_id, progress=progress)


def _report(*, job_id: int, progress: Progress | None) -> Job:
    job = job_progress_refresh(job_id=job_id)
    if progress is not None:
        progress(job)
    return job


def _note_transient(*, chunk_id: int, error: BaseException) -> None:
    try:
        JobChunk.objects.filter(pk=chunk_id).update(last_error=f"{type(error).__name__}: {error}"[:2000])
    except TRANSIENT_ERRORS:
        connections_reset()


def _give_up(*, chunk_id: int, owner: str, error: BaseException) -> None:
    """The retries are spent: fail the job (resumable). If the database is still away, the lease expires and the
    chunk is taken over or resumed later."""
    logger.error("chunk %s: giving up after %d retries: %s", chunk_id, len(transient_delays()), error)
    try:
        job_id = JobChunk.objects.values_list("job_id", flat=True).get(pk=chunk_id)
        chunk_release(chunk_id=chunk_id, owner=owner)
        job_fail(job_id=job_id, error=error)
    except TRANSIENT_ERRORS:
        connections_reset()
