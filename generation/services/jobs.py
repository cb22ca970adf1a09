"""Generation jobs: create (validated), queue, run, cancel, resume, and recovery of chunks whose runner is gone.

A job is split into chunks (in dataset order) when it is created: the model's batch size, smaller for small jobs so
that progress moves every few seconds. Chunks run as Celery tasks on the `generation` queue when a broker is
configured; on the embedded default (no broker) a job queued from the web runs in a background thread of the web
process, and `manage.py generate` runs it in the foreground.

Layers (no import cycle): progress <- leases <- chunks <- jobs; the Celery tasks import these services, and these
services import the tasks only inside functions.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings as django_settings
from django.db import connections, transaction
from django.utils import timezone

from generation.contexts import SETTINGS, settings_for
from generation.models import JOB_DEFAULTS, Dataset, GenerationJob, Instance, JobChunk, JobStatus, LanguageModel
from generation.pronouns import BASES
from generation.services.chunks import TRANSIENT_ERRORS, Progress, chunk_run
from generation.services.leases import (
    chunk_lease_break,
    chunk_lease_live,
    chunk_lease_stale,
    connections_reset,
    heartbeat_seconds,
)
from generation.services.progress import ACTIVE, job_fail, job_progress_refresh, job_start

__all__ = [  # job_start, job_fail and job_progress_refresh live in progress.py; callers may import them from here
    "ACTIVE",
    "JobParameterError",
    "JobParameters",
    "JobStateError",
    "job_cancel",
    "job_create",
    "job_dispatch",
    "job_fail",
    "job_parameters_validate",
    "job_progress_refresh",
    "job_resume",
    "job_run",
    "job_start",
    "jobs_resume_on_start",
    "jobs_unfinished",
    "chunks_requeue_stale",
]

logger = logging.getLogger(__name__)

# A small job is cut into about this many chunks (never more than the model's batch size per chunk), so that its
# progress moves every few seconds of work rather than once per batch.
TARGET_CHUNKS = 20
MAX_SEED = 2**32 - 1
MAX_SAMPLES = 100
MAX_NEW_TOKENS = 2048


class JobParameterError(ValueError):
    """Bad job parameters; `errors` maps each bad field to what is wrong with it."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{field}: {message}" for field, message in errors.items()))


class JobStateError(ValueError):
    """The job is not in a state that allows the action (cancel a finished job, ...)."""


@dataclass(frozen=True)
class JobParameters:
    model: LanguageModel
    dataset: Dataset
    pronouns: list[str]
    settings: list[str]
    samples: int
    max_new_tokens: int
    top_k: int
    top_p: float
    num_beams: int
    seed: int
    per_pronoun: int | None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _choices(value, *, allowed: Sequence[str], what: str) -> tuple[list[str] | None, str | None]:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        return None, f"give a list of {what}"
    unknown = [v for v in value if v not in allowed]
    if unknown:
        return None, f"unknown {what} {', '.join(map(repr, unknown))}; use {', '.join(allowed)}"
    if not value:
        return None, f"choose at least one of {', '.join(allowed)}"
    return [v for v in allowed if v in value], None  # canonical order, no duplicates


def job_parameters_validate(
    *,
    model: str | LanguageModel,
    dataset: str | Dataset,
    pronouns: Sequence[str] | str | None = None,
    settings: Sequence[str] | str | None = None,
    samples: int = JOB_DEFAULTS.samples,
    max_new_tokens: int = JOB_DEFAULTS.max_new_tokens,
    top_k: int = JOB_DEFAULTS.top_k,
    top_p: float = JOB_DEFAULTS.top_p,
    num_beams: int = JOB_DEFAULTS.num_beams,
    seed: int = JOB_DEFAULTS.seed,
    per_pronoun: int | None = None,
) -> JobParameters:
    """Check every parameter; all problems are reported at once, each under its field name."""
    errors: dict[str, str] = {}
    chosen_model = model if isinstance(model, LanguageModel) else LanguageModel.objects.filter(name=model).first()
    if chosen_model is None:
        known = ", ".join(LanguageModel.objects.values_list("name", flat=True)) or "none"
        errors["model"] = f"unknown model {model!r}; registered: {known}"
    chosen_dataset = dataset if isinstance(dataset, Dataset) else Dataset.objects.filter(name=dataset).first()
    if chosen_dataset is None:
        known = ", ".join(Dataset.objects.values_list("name", flat=True)) or "none (import one first)"
        errors["dataset"] = f"unknown dataset {dataset!r}; imported: {known}"
    chosen_pronouns, error = _choices(list(BASES) if pronouns is None else pronouns, allowed=BASES, what="pronouns")
    if error:
        errors["pronouns"] = error
    allowed_settings = settings_for(chosen_dataset.kind) if chosen_dataset is not None else SETTINGS  # TANGO: open
    chosen_settings, error = _choices(
        list(allowed_settings) if settings is None else settings, allowed=allowed_settings, what="settings"
    )
    if error:
        errors["settings"] = error
    if not _is_int(samples) or not 1 <= samples <= MAX_SAMPLES:
        errors["samples"] = f"must be a whole number from 1 to {MAX_SAMPLES}, got {samples!r}"
    if not _is_int(max_new_tokens) or not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
        errors["max_new_tokens"] = f"must be a whole number from 1 to {MAX_NEW_TOKENS}, got {max_new_tokens!r}"
    if not _is_int(top_k) or top_k < 0:
        errors["top_k"] = f"must be a whole number >= 0 (0 turns top-k off), got {top_k!r}"
    if isinstance(top_p, bool) or not isinstance(top_p, int | float) or not 0 < top_p <= 1:
        errors["top_p"] = f"must be in (0, 1], got {top_p!r}"
    if not _is_int(num_beams) or num_beams < 1:
        errors["num_beams"] = f"must be a whole number >= 1, got {num_beams!r}"
    if not _is_int(seed) or not 0 <= seed <= MAX_SEED:
        errors["seed"] = f"must be a whole number from 0 to {MAX_SEED}, got {seed!r}"
    if per_pronoun is not None and (not _is_int(per_pronoun) or per_pronoun < 1):
        errors["per_pronoun"] = f"must be a whole number >= 1 (or left out for all instances), got {per_pronoun!r}"
    if errors or chosen_model is None or chosen_dataset is None or chosen_pronouns is None or chosen_settings is None:
        raise JobParameterError(errors)
    return JobParameters(
        model=chosen_model,
        dataset=chosen_dataset,
        pronouns=chosen_pronouns,
        settings=chosen_settings,
        samples=samples,
        max_new_tokens=max_new_tokens,
        top_k=top_k,
        top_p=float(top_p),
        num_beams=num_beams,
        seed=seed,
        per_pronoun=per_pronoun,
    )


def job_instance_ids(*, dataset: Dataset, pronouns: Sequence[str], per_pronoun: int | None) -> list[int]:
    """The job's instances in dataset order; with `per_pronoun`, the first N of each base pronoun."""
    rows = Instance.objects.filter(dataset=dataset, pronoun__in=pronouns).order_by("ordinal")
    taken: dict[str, int] = {}
    ids = []
    for instance_id, pronoun in rows.values_list("id", "pronoun"):
        if per_pronoun is not None and taken.get(pronoun, 0) >= per_pronoun:
            continue
        taken[pronoun] = taken.get(pronoun, 0) + 1
        ids.append(instance_id)
    return ids


def job_chunk_size(*, instances: int, batch_size: int) -> int:
    """The model's batch size, or less for a small job: about TARGET_CHUNKS chunks, at least one instance each."""
    return max(1, min(batch_size, math.ceil(instances / TARGET_CHUNKS)))


def job_create(*, created_by=None, queue: bool = True, **parameters) -> GenerationJob:
    """Validate, write the job and its chunks in one transaction, and queue it once that commits.

    Takes the keyword arguments of `job_parameters_validate` (model and dataset by name or row).
    """
    params = job_parameters_validate(**parameters)
    instance_ids = job_instance_ids(dataset=params.dataset, pronouns=params.pronouns, per_pronoun=params.per_pronoun)
    if not instance_ids:
        raise JobParameterError(
            {"dataset": f"{params.dataset.name} has no instances for pronouns {', '.join(params.pronouns)}"}
        )
    chunk_size = job_chunk_size(instances=len(instance_ids), batch_size=params.model.batch_size)
    with transaction.atomic():
        job = GenerationJob.objects.create(
            model=params.model,
            dataset=params.dataset,
            pronouns=params.pronouns,
            settings=params.settings,
            samples=params.samples,
            max_new_tokens=params.max_new_tokens,
            top_k=params.top_k,
            top_p=params.top_p,
            num_beams=params.num_beams,
            seed=params.seed,
            per_pronoun=params.per_pronoun,
            total_instances=len(instance_ids),
            total_generations=len(instance_ids) * len(params.settings) * params.samples,
            created_by=created_by,
        )
        JobChunk.objects.bulk_create(
            JobChunk(job=job, index=index, instance_ids=instance_ids[start : start + chunk_size])
            for index, start in enumerate(range(0, len(instance_ids), chunk_size))
        )
        if queue:
            transaction.on_commit(lambda: job_dispatch(job_id=job.pk))
    return job


def job_dispatch(*, job_id: int) -> None:
    """Hand a committed job to whoever runs it: Celery workers, or a background thread without a broker.

    With a broker, each unfinished chunk that no live runner holds is sent (publishing is retried when the broker is
    briefly away); a chunk sent twice runs once (its lease), and a finished one is skipped.
    """
    if django_settings.CELERY_TASK_ALWAYS_EAGER:
        _job_thread_start(job_run_in_background, name=f"concord-job-{job_id}", job_id=job_id)
        return
    now = timezone.now()
    chunks = JobChunk.objects.filter(job_id=job_id, finished_at__isnull=True).order_by("index")
    _chunks_send([chunk.pk for chunk in chunks if not chunk_lease_live(chunk, now=now)])


def _chunks_send(chunk_ids: list[int]) -> None:
    from generation.tasks import chunk_run_task

    for chunk_id in chunk_ids:
        chunk_run_task.apply_async(
            (chunk_id,),
            retry=True,
            retry_policy={"max_retries": 5, "interval_start": 0.5, "interval_step": 1.0, "interval_max": 5.0},
        )


_in_process = threading.Lock()  # one in-process job at a time: they share the model and the global random state

BUSY_POLL_SECONDS = 2.0


def job_run(*, job_id: int, progress: Progress | None = None) -> GenerationJob:
    """Run every unfinished chunk of a job here, in order, until the job ends (done, cancelled or failed).

    A chunk held by another live runner is left to it and looked at again every few seconds: when its lease goes
    stale (that runner is gone), it is run here. `progress` is called with the job after each written step.
    """
    with _in_process:
        while True:
            job = GenerationJob.objects.get(pk=job_id)
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
                if GenerationJob.objects.filter(pk=job_id).values_list("status", flat=True).get() not in ACTIVE:
                    break
            if not ran:
                time.sleep(BUSY_POLL_SECONDS)  # every pending chunk is held by a live runner elsewhere
    return job_progress_refresh(job_id=job_id)


def job_run_in_background(*, job_id: int) -> None:
    try:
        job_run(job_id=job_id)
    except Exception:
        logger.exception("in-process generation job %s stopped", job_id)
    finally:
        connections.close_all()  # this thread's connections only (they are per thread)


def job_cancel(*, job: GenerationJob) -> GenerationJob:
    """Stop a queued or running job: chunks not yet started are skipped, a running chunk stops at its next step."""
    with transaction.atomic():
        job = GenerationJob.objects.select_for_update().get(pk=job.pk)
        if job.status not in ACTIVE:
            raise JobStateError(f"job {job.pk} is {job.status}; only queued or running jobs can be cancelled")
        job.status = JobStatus.CANCELLED
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "finished_at"])
    return job


RESUMABLE = (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.FAILED, JobStatus.CANCELLED)


def job_resume(*, job_id: int, queue: bool = True) -> GenerationJob:
    """Resume a job that did not finish (failed, cancelled, or left queued or running by a runner that is gone).

    The job is queued again from where its rows stop: stale chunk leases are freed, and once this commits its
    unfinished chunks are dispatched (with `queue=False` the caller runs it, e.g. with `job_run`). Rows already
    written are kept; the unique constraints keep a re-run from duplicating any. A job with every row is marked done.
    """
    with transaction.atomic():
        job = GenerationJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            raise JobStateError(f"no generation job {job_id}")
        if job.status not in RESUMABLE:
            raise JobStateError(f"job {job.pk} is {job.status}; only unfinished jobs can be resumed")
        for chunk in JobChunk.objects.filter(job=job, finished_at__isnull=True).exclude(lease_owner=""):
            chunk_lease_break(chunk=chunk)
        job.status = JobStatus.QUEUED
        job.error = ""
        job.finished_at = None
        job.run_started_at = None
        job.run_done_at_start = job.done_generations
        job.resumes += 1
        job.save(update_fields=["status", "error", "finished_at", "run_started_at", "run_done_at_start", "resumes"])
        if queue:
            transaction.on_commit(lambda: job_dispatch(job_id=job.pk))
    if not JobChunk.objects.filter(job=job, finished_at__isnull=True).exists():
        job_start(job_id=job.pk)  # every chunk finished before the stop: only the final recount was missing
    return job_progress_refresh(job_id=job.pk)


def jobs_unfinished(*, include_failed: bool) -> list[int]:
    """Jobs left queued or running (and failed ones, if asked), oldest first."""
    statuses = [*ACTIVE, JobStatus.FAILED] if include_failed else list(ACTIVE)
    return list(
        GenerationJob.objects.filter(status__in=statuses).order_by("created_at", "id").values_list("id", flat=True)
    )


def chunks_requeue_stale() -> list[int]:
    """Send again the chunks of queued or running jobs whose runner is gone (an expired lease, or a dead process of
    this host). Each stale lease is freed by one UPDATE, so two sweepers never send the same chunk twice."""
    candidates = JobChunk.objects.filter(finished_at__isnull=True, job__status__in=ACTIVE).exclude(lease_owner="")
    now = timezone.now()
    freed = [chunk.pk for chunk in candidates if chunk_lease_stale(chunk, now=now) and chunk_lease_break(chunk=chunk)]
    if freed:
        logger.warning("chunks %s: their runners are gone; queued again", freed)
        _chunks_send(freed)
    return freed


def stale_chunk_sweeper_start() -> threading.Thread:
    """In each Celery worker: a thread that every few seconds re-queues chunks whose runner is gone, so that a chunk
    of a killed worker runs again within a minute (lease + one sweep), long before the broker's visibility timeout."""

    def sweep_forever() -> None:
        while True:
            time.sleep(heartbeat_seconds())
            try:
                chunks_requeue_stale()
            except TRANSIENT_ERRORS as exc:
                logger.warning("stale chunk sweep failed (%s); trying again", exc)
                connections_reset()
            except Exception:
                logger.exception("stale chunk sweep failed")
                connections_reset()

    thread = threading.Thread(target=sweep_forever, name="concord-chunk-sweeper", daemon=True)
    thread.start()
    return thread


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


def _resume_thread_start() -> None:
    def resume_all() -> None:
        try:
            for job_id in jobs_unfinished(include_failed=False):
                logger.warning("resuming generation job %s, left unfinished by an earlier process", job_id)
                try:
                    job_resume(job_id=job_id, queue=False)  # frees its dead leases, restarts the pace
                except JobStateError:
                    continue  # it ended meanwhile
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
