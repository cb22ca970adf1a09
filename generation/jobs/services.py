"""What a job is: validated (generation/parameters.py), created with its chunks, cancelled (for good), resumed.

A job of any kind (generation/jobs/kinds.py) is split into chunks when it is created: its kind's work units in
order, at most the batch size per chunk, smaller for small jobs so that progress moves every few seconds. Where the
chunks run (Celery workers, or a thread of the web process on the embedded default) is generation/jobs/runner.py.

Creating a job and handing it to the broker succeed or fail together: if the broker cannot take it, the job is
marked failed with a message that says so (it can be resumed) and `JobDispatchError` is raised (the API answers 503).
Cancel is final: nothing resumes a cancelled job, and its chunks stop writing at their next batch (docs/domain.md,
'Crash recovery').

Layers (no import cycle): kinds, leases <- progress <- chunks <- runner <- services (generation/jobs/__init__.py);
the Celery tasks import the chunk runner, and the runner imports the tasks only inside functions.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from common.audit import CREATE, audit_record
from common.errors import ServiceError
from generation.jobs.inputs import job_input_delete
from generation.jobs.kinds import job_kind_handler
from generation.jobs.progress import ACTIVE, job_fail, job_progress_refresh, job_requeue, job_start
from generation.jobs.runner import (
    JobDispatchError,
    chunks_requeue_stale,
    job_dispatch,
    job_run,
    jobs_left_by_runners_gone,
    jobs_unfinished,
)
from generation.models import Job, JobChunk, JobStatus
from generation.parameters import JobParameterError, JobParameters, job_parameters_validate
from generation.signals import jobs_changed

logger = logging.getLogger(__name__)

__all__ = [  # job_start, job_fail, job_progress_refresh (progress.py) and the runner's names may be imported from here
    "ACTIVE",
    "JobDispatchError",
    "JobParameterError",
    "JobParameters",
    "JobStateError",
    "chunks_requeue_stale",
    "job_cancel",
    "job_create",
    "job_record",
    "job_submit",
    "job_dispatch",
    "job_fail",
    "job_parameters_validate",
    "job_progress_refresh",
    "job_resume",
    "job_run",
    "job_start",
    "jobs_unfinished",
]

# A small job is cut into about this many chunks (never more than the batch size per chunk), so that its
# progress moves every few seconds of work rather than once per batch.
TARGET_CHUNKS = 20


class JobStateError(ServiceError, ValueError):
    """The job is not in a state that allows the action (cancel a finished job, resume a cancelled one, ...): 409."""

    status = 409


@dataclasses.dataclass(frozen=True)
class JobSize:
    """What a job would be before it is queued: its size and, from the model's recent pace, its time."""

    instances: int
    settings: int
    samples: int
    rows: int  # instances x settings x samples (the results a generation job writes)
    seconds_per_row: float | None  # the model's recent pace; None before it ran anything
    seconds: float | None = None
    seconds_low: float | None = None
    seconds_high: float | None = None


def job_size(*, params: JobParameters) -> JobSize:
    """The job's size as `job_create` would cut it (its work units, times the results per unit) and its time at
    the model's recent pace on this machine's runners, with the range x0.5 to x2 (docs/domain.md, 'Jobs')."""
    from generation.selectors import model_seconds_per_row  # reads stay in selectors

    handler = job_kind_handler(params.kind)
    instances = len(handler.units(params=params))
    rows = instances * handler.items_per_unit(params=params)
    per_row = model_seconds_per_row(model=params.model, kind=params.kind)
    seconds = None if per_row is None else rows * per_row
    return JobSize(
        instances=instances,
        settings=len(params.settings),
        samples=params.samples,
        rows=rows,
        seconds_per_row=per_row,
        seconds=seconds,
        seconds_low=None if seconds is None else seconds * 0.5,
        seconds_high=None if seconds is None else seconds * 2,
    )


def job_chunk_size(*, instances: int, batch_size: int, at_least: int = 1) -> int:
    """The batch size, or less for a small job: about TARGET_CHUNKS chunks, at least one unit each (`at_least`: at
    least that many, within the batch size: a model behind an endpoint sends a chunk's requests concurrently)."""
    return max(1, min(batch_size, max(at_least, math.ceil(instances / TARGET_CHUNKS))))


def _audited(parameters: dict) -> dict:
    """What a new job's audit row keeps of its parameters: all of them, as the API gives them (a generation job's
    dataset, pronouns, settings, samples, decoding and seed), its kind's options only when it has some."""
    return {key: value for key, value in parameters.items() if not (key == "options" and not value)}


def job_create(*, created_by=None, queue: bool = True, params: JobParameters | None = None, **parameters) -> Job:
    """Validate, write the job and its chunks in one transaction, and hand it to its runner once that commits.

    Takes the fields of generation/parameters.py (model and dataset by name or row), or `params` already validated
    by the form or the API (validated once). Raises `JobParameterError`
    (nothing written) or, when the broker cannot take the job, `JobDispatchError` (the job is kept, failed and
    resumable).
    """
    if params is None:
        params = job_parameters_validate(**parameters)
    elif parameters:
        raise TypeError(f"job_create: give params or parameters, not both ({', '.join(parameters)})")
    handler = job_kind_handler(params.kind)
    unit_ids = handler.units(params=params)
    if not unit_ids:
        raise JobParameterError(
            handler.nothing_to_do(params=params) or {"options": f"this {params.kind} job has nothing to do"}
        )
    endpoint = params.model.endpoint_settings if params.model.is_endpoint else None
    chunk_size = job_chunk_size(
        instances=len(unit_ids),
        batch_size=params.batch_size_or_model(),
        at_least=endpoint.concurrency if endpoint is not None else 1,
    )
    with transaction.atomic():
        job = Job.objects.create(
            kind=params.kind,
            model=params.model,
            batch_size=params.batch_size,
            options=handler.options_kept(params=params),
            total_units=len(unit_ids),
            total_items=len(unit_ids) * handler.items_per_unit(params=params),
            created_by=created_by,
        )
        handler.rows_create(job=job, params=params)
        jobs_changed.send(sender=Job, job_ids=[job.pk])  # a new run over a pool changes its report
        audit_record(
            event="job.create",
            obj=job,
            actor=created_by,
            action=CREATE,
            data={"kind": job.kind, "model": job.model.name, **_audited(handler.parameters(job=job))},
        )
        JobChunk.objects.bulk_create(
            JobChunk(job=job, index=index, unit_ids=unit_ids[start : start + chunk_size])
            for index, start in enumerate(range(0, len(unit_ids), chunk_size))
        )
    if queue:
        # Right away when no transaction is open (the error reaches the caller); at the commit of an outer one.
        transaction.on_commit(lambda: job_dispatch(job_id=job.pk))
    job.refresh_from_db(fields=["status", "error"])
    return job


def job_record(*, params: JobParameters, units: int, items: int, created_by=None) -> Job:
    """A finished job whose rows were made elsewhere (texts written by hand, an external judge's labels, a bench's
    fixture): written done with its kind's own row, never queued. The caller writes the result rows in the same
    transaction."""
    handler = job_kind_handler(params.kind)
    now = timezone.now()
    with transaction.atomic():
        job = Job.objects.create(
            kind=params.kind,
            model=params.model,
            batch_size=params.batch_size,
            options=handler.options_kept(params=params),
            status=JobStatus.DONE,
            total_units=units,
            done_units=units,
            total_items=items,
            done_items=items,
            started_at=now,
            finished_at=now,
            run_started_at=now,
            created_by=created_by,
        )
        handler.rows_create(job=job, params=params)
        jobs_changed.send(sender=Job, job_ids=[job.pk])  # a new run over a pool changes its report
    return job


def job_cancel(*, job: Job, user=None, event: str = "job.cancel", shown: str = "", audited=None) -> Job:
    """Stop a queued or running job, for good: chunks not yet started are skipped, a running chunk writes nothing
    more and stops at its next batch, its stored input is deleted, and nothing resumes it (docs/domain.md, 'Crash
    recovery'). A job whose last write is committing (`job_seal`) has ended: it is not cancelled. `event` names the
    audit entry, `audited` the row it is on (the job's; an upload's: its kind's row); `shown` the status the refusal
    names (the kind's word for a running job)."""
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job.pk)
        if job.status not in ACTIVE or job.finished_at is not None:
            status = job.status if job.status not in ACTIVE else "ending"
            raise JobStateError(f"job {job.pk} is {shown or status}; only queued or running jobs can be cancelled")
        before = job.status
        job.status = JobStatus.CANCELLED
        job.finished_at = timezone.now()
        job.phase = ""
        job.save(update_fields=["status", "finished_at", "phase"])
        jobs_changed.send(sender=Job, job_ids=[job.pk])
        job_input_delete(job_id=job.pk)
        audit_record(event=event, obj=audited or job, actor=user, changes={"status": [before, job.status]})
    return job


def job_submit(
    *, kind: str, created_by=None, options: dict | None = None, write: Callable[[Job], object] | None = None
) -> Job:
    """A job of a kind without a model or a dataset (an upload's import, `JobKind.needs_model`): one unit in one
    chunk; `write(job)` stores what the kind keeps of it (its input, `generation/jobs/inputs.py`, its own row, the
    audit entry) in the transaction that creates it. It is handed to its runner once that transaction commits."""
    if job_kind_handler(kind).needs_model:
        raise TypeError(f"job kind {kind} needs a model: create its jobs with job_create")
    with transaction.atomic():
        job = Job.objects.create(
            kind=kind, model=None, options=dict(options or {}), total_units=1, total_items=1, created_by=created_by
        )
        JobChunk.objects.create(job=job, index=0, unit_ids=[0])
        if write is not None:
            write(job)
        transaction.on_commit(lambda: _submitted_dispatch(job_id=job.pk))
    return job


def _submitted_dispatch(*, job_id: int) -> None:
    """An upload's job is answered for at once: a broker out of reach fails it (saying so on the job, where its
    page shows it) rather than the request that stored it."""
    try:
        job_dispatch(job_id=job_id)
    except JobDispatchError as exc:
        logger.error("%s", exc)


RESUMABLE = (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.FAILED)


def job_resume(*, job_id: int, queue: bool = True, user=None) -> Job:
    """Resume a job that did not finish (failed, or left queued or running by a runner that is gone); a cancelled
    job stays cancelled.

    The job is queued again from where its rows stop: stale chunk leases are freed, and once this commits its
    unfinished chunks are dispatched (with `queue=False` the caller runs it, e.g. with `job_run`). Rows already
    written are kept; the unique constraints keep a re-run from duplicating any. A job with every row is marked done.
    """
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            raise JobStateError(f"no generation job {job_id}")
        if job.status == JobStatus.CANCELLED:
            raise JobStateError(f"job {job.pk} was cancelled; a cancelled job is never resumed (queue a new one)")
        if job.status == JobStatus.FAILED and job_kind_handler(job.kind).failure_final:
            raise JobStateError(f"job {job.pk} failed; a failed {job.kind} job is never resumed (submit it again)")
        if job.status not in RESUMABLE:
            raise JobStateError(f"job {job.pk} is {job.status}; only unfinished jobs can be resumed")
        audit_record(event="job.resume", obj=job, actor=user, data={"status": job.status})
        job_requeue(job=job)
    if not JobChunk.objects.filter(job=job, finished_at__isnull=True).exists():
        job_start(job_id=job.pk)  # every chunk finished before the stop: only the final recount was missing
        return job_progress_refresh(job_id=job.pk)
    if queue:
        transaction.on_commit(lambda: job_dispatch(job_id=job.pk))
    return job_progress_refresh(job_id=job.pk)


def uploads_resume(*, foreground: bool, kinds: list[str] | None = None) -> list[dict]:
    """`resume_jobs`: the uploads' imports (the kinds the jobs page does not list) left queued, or running by a
    runner that is gone, run again: here, to their end (`foreground`, no broker), or queued for the workers. One
    whose runner is alive is left to it; a cancelled or failed one is never resumed. Each kind's `resume_entry` of
    each, oldest first. `kinds`: of these kinds only."""
    resumed = []
    for job_id in jobs_left_by_runners_gone(listed=False):
        job = Job.objects.get(pk=job_id)
        if kinds is not None and job.kind not in kinds:
            continue
        try:
            job = job_resume(job_id=job_id, queue=not foreground)
        except JobStateError:
            continue  # it ended meanwhile
        if foreground:
            job = job_run(job_id=job.pk)
        resumed.append(job_kind_handler(job.kind).resume_entry(job=job))
    return resumed
