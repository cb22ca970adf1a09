"""Where a job runs: its chunks sent to Celery workers, or run in a thread of the web process (the embedded default,
no broker) or in the foreground (`manage.py generate`); the start-up resume, the workers' chunk sweeper and the
uWSGI hooks. What a job is (create, cancel, resume) is generation/jobs/services.py.

Recovery (docs/domain.md, 'Crash recovery'): every Celery worker runs a sweeper thread that, every few seconds,
sends again (1) the chunks whose runner is gone (an expired lease, a dead process of this host) and (2) the chunks
that were sent but never claimed within `CONCORD_CHUNK_UNCLAIMED_SECONDS` while the broker holds fewer messages than
such chunks: a broker restarted empty lost them. A chunk sent twice runs once (its lease); a cancelled job's chunks
are never sent again.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import timedelta

from django.conf import settings as django_settings
from django.db import connections, transaction
from django.utils import timezone

from common.errors import ServiceError
from generation.engines import ENGINES
from generation.jobs.chunks import TRANSIENT_ERRORS, Progress, chunk_run
from generation.jobs.kinds import job_kind_handler, job_kinds, job_kinds_unlisted
from generation.jobs.leases import (
    chunk_lease_break,
    chunk_lease_live,
    chunk_lease_stale,
    connections_reset,
    heartbeat_seconds,
)
from generation.jobs.progress import ACTIVE, job_fail, job_progress_refresh, job_requeue
from generation.models import Job, JobChunk, JobStatus

logger = logging.getLogger(__name__)

# Publishing is retried briefly: a broker that is away for longer fails the request at once, with a clear answer.
PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1.0}
BROKER_DOWN = (
    "the job queue (broker) could not be reached, so the job was not handed to the workers; it is kept and can be "
    "resumed once the broker is back"
)


class JobDispatchError(ServiceError, RuntimeError):
    """The broker did not take the job's chunks; the job (`job_id`) is marked failed (resumable) with this message."""

    status = 503

    def __init__(self, message: str, *, job_id: int):
        self.job_id = job_id
        super().__init__(message)

    def body(self) -> dict[str, object]:
        return {"detail": str(self), "job": self.job_id, "resumable": True}  # the job is kept, and says so


def job_dispatch(*, job_id: int) -> None:
    """Hand a committed job to whoever runs it: Celery workers, or a background thread without a broker.

    With a broker, each unfinished chunk that no live runner holds is sent; a chunk sent twice runs once (its lease),
    and a finished one is skipped. If the broker cannot be reached, the job is marked failed (resumable) and
    `JobDispatchError` is raised.
    """
    if django_settings.CELERY_TASK_ALWAYS_EAGER:
        _chunks_handed(job_id=job_id)
        _job_thread_start(job_run_in_background, name=f"concord-job-{job_id}", job_id=job_id)
        return
    now = timezone.now()
    chunks = JobChunk.objects.filter(job_id=job_id, finished_at__isnull=True).order_by("index")
    try:
        _chunks_send([chunk.pk for chunk in chunks if not chunk_lease_live(chunk, now=now)])
    except Exception as exc:
        logger.error("job %s: publishing failed: %s: %s", job_id, type(exc).__name__, exc)
        job_fail(job_id=job_id, error=f"{BROKER_DOWN} ({type(exc).__name__}: {exc})")
        raise JobDispatchError(f"Job {job_id}: {BROKER_DOWN}.", job_id=job_id) from exc


def _chunks_send(chunk_ids: list[int]) -> None:
    """Publish each chunk's task and note when it was sent (the sweeper's clock for chunks nobody claims)."""
    from generation.tasks import chunk_run_task

    for chunk_id in chunk_ids:
        chunk_run_task.apply_async((chunk_id,), retry=True, retry_policy=PUBLISH_RETRY_POLICY)
        JobChunk.objects.filter(pk=chunk_id).update(sent_at=timezone.now())


def _chunks_handed(*, job_id: int) -> None:
    """Note when an in-process job was handed to its runner, as the broker's send time is noted: the jobs page's
    queue place and the order below both read it (generation/selectors.py, job_run_order)."""
    JobChunk.objects.filter(job_id=job_id, finished_at__isnull=True, sent_at__isnull=True).update(
        sent_at=timezone.now()
    )


BUSY_POLL_SECONDS = 2.0


class _RunOrder:
    """One in-process job at a time (they share the model and the global random state), taken in the run order the
    jobs page shows: of the jobs waiting here, the first in `job_run_order` goes next. A plain lock would let any
    waiting thread in, so a job shown 3rd could run before the 2nd."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._holder: int | None = None
        self._waiting: set[int] = set()

    def _next(self) -> int:
        from generation.selectors import job_run_order  # reads stay in selectors

        waiting = set(self._waiting)
        ordered = job_run_order(job_ids=waiting)
        ended = sorted(waiting - set(ordered))  # cancelled or finished meanwhile: they leave at once
        return (ended or ordered)[0]

    @contextmanager
    def turn(self, job_id: int) -> Iterator[None]:
        with self._condition:
            self._waiting.add(job_id)
            try:
                while self._holder is not None or self._next() != job_id:
                    self._condition.wait(timeout=BUSY_POLL_SECONDS)
                self._holder = job_id
            finally:
                self._waiting.discard(job_id)
        try:
            yield
        finally:
            with self._condition:
                self._holder = None
                self._condition.notify_all()


_in_process = _RunOrder()


def job_run(*, job_id: int, progress: Progress | None = None) -> Job:
    """Run every unfinished chunk of a job here, in order, until the job ends (done, cancelled or failed).

    A chunk held by another live runner is left to it and looked at again every few seconds: when its lease goes
    stale (that runner is gone), it is run here. `progress` is called with the job after each written step.
    """
    kind = Job.objects.filter(pk=job_id).values_list("kind", flat=True).first()
    alone = kind is None or job_kind_handler(kind).runs_alone
    with _in_process.turn(job_id) if alone else nullcontext():
        while True:
            job = Job.objects.get(pk=job_id)
            if job.status not in ACTIVE:
                break
            pending = list(JobChunk.objects.filter(job_id=job_id, finished_at__isnull=True).order_by("index"))
            if not pending:
                break
            ran = False
            for chunk in pending:
                try:
                    chunk_run(chunk_id=chunk.pk, progress=progress)
                except Exception:
                    return job_progress_refresh(job_id=job_id)  # chunk_run recorded the failure on the job
                if JobChunk.objects.filter(pk=chunk.pk, finished_at__isnull=False).exists():
                    ran = True
                if Job.objects.filter(pk=job_id).values_list("status", flat=True).get() not in ACTIVE:
                    break
            if not ran:
                time.sleep(BUSY_POLL_SECONDS)  # every pending chunk is held by a live runner elsewhere
    return job_progress_refresh(job_id=job_id)


def job_run_in_background(*, job_id: int) -> None:
    try:
        job_run(job_id=job_id)
    except Exception:
        logger.exception("in-process job %s stopped", job_id)
    finally:
        connections.close_all()  # this thread's connections only (they are per thread)


def jobs_unfinished(*, include_failed: bool, listed: bool = True) -> list[int]:
    """Jobs left queued or running (and failed ones, if asked), oldest first; never a cancelled one. `listed`: of the
    kinds the jobs page lists; False: of the others (uploads' imports), whose failure is final."""
    statuses = [*ACTIVE, JobStatus.FAILED] if include_failed and listed else list(ACTIVE)
    jobs = Job.objects.filter(status__in=statuses)
    unlisted = job_kinds_unlisted()
    jobs = jobs.exclude(kind__in=unlisted) if listed else jobs.filter(kind__in=unlisted)
    return list(jobs.order_by("created_at", "id").values_list("id", flat=True))


def jobs_left_by_runners_gone(*, listed: bool) -> list[int]:
    """`resume_jobs`: the jobs left queued, or running with no live runner on any unfinished chunk (its runner is
    gone), oldest first. One whose runner is alive is left to it."""
    now = timezone.now()
    gone = []
    for job_id in jobs_unfinished(include_failed=False, listed=listed):
        chunks = JobChunk.objects.filter(job_id=job_id, finished_at__isnull=True)
        if not any(chunk_lease_live(chunk, now=now) for chunk in chunks):
            gone.append(job_id)
    return gone


def chunks_requeue_stale() -> list[int]:
    """Send again the chunks of queued or running jobs whose runner is gone (an expired lease, or a dead process of
    this host). Each stale lease is freed by one UPDATE, so two sweepers never send the same chunk twice."""
    candidates = JobChunk.objects.filter(finished_at__isnull=True, job__status__in=ACTIVE).exclude(lease_owner="")
    now = timezone.now()
    freed = [chunk.pk for chunk in candidates if chunk_lease_stale(chunk, now=now) and chunk_lease_break(chunk=chunk)]
    if freed:
        logger.warning("chunks %s: their runners are gone; queued again", freed)
        for job_id, kind in Job.objects.filter(chunks__in=freed).distinct().values_list("pk", "kind"):
            logger.warning("job %s (%s): its runner is gone; queued again", job_id, kind)
        _chunks_send(freed)
    return freed


def unclaimed_seconds() -> float:
    return float(django_settings.CONCORD_CHUNK_UNCLAIMED_SECONDS)


def chunk_queues() -> list[str]:
    """The queues a chunk's task may be routed to: `generation`, and the engines' own (`Engine.queue`)."""
    routes = django_settings.CELERY_TASK_ROUTES
    queues = {"generation"}
    for route in routes if isinstance(routes, list | tuple) else [routes]:
        if isinstance(route, dict):
            queues.update(
                str(target["queue"]) for target in route.values() if isinstance(target, dict) and "queue" in target
            )
    queues.update(queue for engine in ENGINES.values() if (queue := engine.queue()))
    queues.update(queue for name in job_kinds() if (queue := job_kind_handler(name).queue))
    return sorted(queues)


def broker_backlog() -> int:
    """How many messages the broker holds in the chunks' queues (a queue that is gone, as after a restart of a
    broker that keeps nothing, holds 0). Raises when the broker cannot be reached."""
    from celery import current_app

    total = 0
    with current_app.connection_for_read() as connection:
        for queue in chunk_queues():
            channel = connection.channel()
            try:
                _, count, _ = channel.queue_declare(queue=queue, passive=True)
            except Exception as exc:
                if "NOT_FOUND" not in str(exc) and "no queue" not in str(exc).lower():
                    raise
                count = 0
            finally:
                try:
                    channel.close()
                except Exception:  # a channel the failed declare closed already
                    pass
            total += int(count)
    return total


def chunks_resend_unclaimed(*, backlog: int | None = None) -> list[int]:
    """Send again the chunks of queued or running jobs that were sent but claimed by no worker for
    `unclaimed_seconds()`, when the broker holds fewer messages than the chunks waiting for one (it lost them).
    Each chunk is taken by one UPDATE of its `sent_at`, so two sweepers never send it twice."""
    waiting = JobChunk.objects.filter(
        finished_at__isnull=True, job__status__in=ACTIVE, lease_owner="", sent_at__isnull=False
    )
    count = waiting.count()
    if not count:
        return []
    if backlog is None:
        backlog = broker_backlog()
    if backlog >= count:
        return []  # every waiting chunk may still have its message: workers are busy, not lost
    cutoff = timezone.now() - timedelta(seconds=unclaimed_seconds())
    taken = []
    for chunk_id, sent_at in waiting.filter(sent_at__lt=cutoff).order_by("sent_at", "id").values_list("id", "sent_at"):
        if JobChunk.objects.filter(pk=chunk_id, sent_at=sent_at, lease_owner="").update(sent_at=timezone.now()):
            taken.append(chunk_id)
    if taken:
        logger.warning(
            "chunks %s: sent but never claimed, and the broker holds %d messages for %d waiting chunks; sent again",
            taken, backlog, count,
        )  # fmt: skip
        _chunks_send(taken)
    return taken


def chunks_sweep() -> list[int]:
    """One sweep: chunks whose runner is gone, then chunks the broker lost."""
    return chunks_requeue_stale() + chunks_resend_unclaimed()


def work_sweep() -> None:
    """One round of the workers' sweeper: the chunks of every kind's jobs (generation, judges, imports)."""
    chunks_sweep()


def stale_chunk_sweeper_start() -> threading.Thread:
    """In each Celery worker: a thread that every few seconds re-queues chunks whose runner is gone or whose message
    the broker lost, so that a chunk of a killed worker runs again within a minute (lease + one sweep), long before
    the broker's visibility timeout, and a broker restarted empty gets its chunks again; imports likewise
    (`work_sweep`)."""

    def sweep_forever() -> None:
        while True:
            time.sleep(heartbeat_seconds())
            try:
                work_sweep()
            except TRANSIENT_ERRORS as exc:
                logger.warning("chunk sweep failed (%s); trying again", exc)
                connections_reset()
            except Exception:
                logger.exception("chunk sweep failed")
                connections_reset()

    thread = threading.Thread(target=sweep_forever, name="concord-chunk-sweeper", daemon=True)
    thread.start()
    return thread


def job_requeue_unfinished(*, job_id: int) -> bool:
    """Queue a job left queued or running by a stopped process again (frees its dead leases, restarts the pace);
    False when it ended or was cancelled meanwhile (cancel is final)."""
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id, status__in=ACTIVE).first()
        if job is None:
            return False
        job_requeue(job=job)
    return True


def jobs_resume_on_start() -> None:
    """On the embedded default (no broker), resume the jobs a stopped web process left queued or running, in a
    background thread once the server starts. Under uWSGI, the first Django process does it after the fork. The web
    process also gets the exit guard below (only the server's process: a test run's exit status must stand)."""
    if not django_settings.CELERY_TASK_ALWAYS_EAGER:
        return  # Celery workers and their sweepers recover chunks; `resume_jobs` resumes failed jobs
    atexit.register(_exit_while_a_job_thread_runs)
    if "uwsgi" in sys.modules:
        import uwsgi
        from uwsgidecorators import postfork

        def first_process_resumes() -> None:
            if uwsgi.worker_id() == 1:
                _resume_thread_start()

        postfork(first_process_resumes)
        return
    _resume_thread_start()


def uploads_resume_on_start(*, started_before, kinds: list[str] | None = None) -> list[int]:
    """On the embedded default, run again the unlisted kinds' jobs (uploads' imports) an earlier process left
    queued or running, each in a thread of its own as a new one runs; their ids. Only jobs created before this server
    started (`started_before`): none of its own is among them. `kinds`: of these kinds only."""
    left = Job.objects.filter(status__in=ACTIVE, kind__in=job_kinds_unlisted(), created_at__lt=started_before)
    if kinds is not None:
        left = left.filter(kind__in=kinds)
    restarted = []
    for job_id in left.order_by("pk").values_list("pk", flat=True):
        logger.warning("restarting job %s, an import left unfinished by an earlier process", job_id)
        if job_requeue_unfinished(job_id=job_id):
            job_dispatch(job_id=job_id)
            restarted.append(job_id)
    return restarted


def _resume_thread_start() -> None:
    started = timezone.now()

    def resume_all() -> None:
        try:
            uploads_resume_on_start(started_before=started)
        except Exception:
            logger.exception("resuming unfinished imports failed")
        try:
            # Every job left over is queued again first, oldest first, so that the queue places shown while the
            # first runs are the order they run in (and a job queued meanwhile comes after them).
            requeued = []
            for job_id in jobs_unfinished(include_failed=False):
                if Job.objects.filter(pk=job_id, started_at__isnull=False).exists():
                    logger.warning("resuming generation job %s, left unfinished by an earlier process", job_id)
                else:  # queued while no server ran (the demo's first start): nothing was left unfinished
                    logger.info("starting generation job %s, queued before the server started", job_id)
                if job_requeue_unfinished(job_id=job_id):  # else it ended, or was cancelled, meanwhile
                    _chunks_handed(job_id=job_id)
                    requeued.append(job_id)
            for job_id in requeued:
                job_run(job_id=job_id)
        except Exception:
            logger.exception("resuming unfinished generation jobs failed")
        finally:
            connections.close_all()

    _job_thread_start(resume_all, name="concord-job-resume")


_JOB_THREAD_PREFIX = "concord-job-"


def _job_thread_start(target, *, name: str, **kwargs) -> None:
    """Start an in-process job thread (the embedded default); `name` starts with concord-job-."""
    threading.Thread(target=target, kwargs=kwargs, name=name, daemon=True).start()


def _exit_while_a_job_thread_runs() -> None:
    """At exit (Ctrl-C to the embedded server) with a job thread mid-step: end the process here, before the
    interpreter's finalization meets that thread inside the model, where it can hang. Nothing is lost: the chunk's
    written steps are committed and the next start resumes the job. The status is runserver's after Ctrl-C: 0."""
    running = sorted(t.name for t in threading.enumerate() if t.name.startswith(_JOB_THREAD_PREFIX) and t.is_alive())
    if not running:
        return
    logger.warning("stopping with %s mid-step; the job resumes on the next start", ", ".join(running))
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)
