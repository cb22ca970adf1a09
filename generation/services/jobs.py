"""Generation jobs: create (validated), queue, run, cancel, fail, and progress recomputed from the rows.

A job is split into chunks of the model's batch size (in dataset order) when it is created. Chunks run as Celery tasks
on the `generation` queue when a broker is configured; on the embedded default (no broker) a job queued from the web
runs in a background thread of the web process, and `manage.py generate --wait` runs it in the foreground.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.conf import settings as django_settings
from django.db import connections, transaction
from django.db.models import Count
from django.utils import timezone

from generation.contexts import SETTINGS
from generation.models import (
    Dataset,
    Generation,
    GenerationJob,
    Instance,
    JobChunk,
    JobStatus,
    LanguageModel,
    ProbResult,
)
from generation.pronouns import BASES

logger = logging.getLogger(__name__)

ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)
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
    samples: int = 5,
    max_new_tokens: int = 50,
    top_k: int = 50,
    top_p: float = 0.95,
    num_beams: int = 1,
    seed: int = 0,
    per_pronoun: int | None = None,
) -> JobParameters:
    """Check every parameter; all problems are reported at once, each under its field name."""
    errors: dict[str, str] = {}
    if isinstance(model, str):
        found = LanguageModel.objects.filter(name=model).first()
        if found is None:
            known = ", ".join(LanguageModel.objects.values_list("name", flat=True)) or "none"
            errors["model"] = f"unknown model {model!r}; registered: {known}"
        model = found
    if isinstance(dataset, str):
        found = Dataset.objects.filter(name=dataset).first()
        if found is None:
            known = ", ".join(Dataset.objects.values_list("name", flat=True)) or "none (import one first)"
            errors["dataset"] = f"unknown dataset {dataset!r}; imported: {known}"
        dataset = found
    chosen_pronouns, error = _choices(list(BASES) if pronouns is None else pronouns, allowed=BASES, what="pronouns")
    if error:
        errors["pronouns"] = error
    chosen_settings, error = _choices(
        list(SETTINGS) if settings is None else settings, allowed=SETTINGS, what="settings"
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
    if errors:
        raise JobParameterError(errors)
    return JobParameters(
        model=model,
        dataset=dataset,
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
    chunk_size = params.model.batch_size
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
    """Hand a committed job to whoever runs it: Celery workers, or a background thread without a broker."""
    if django_settings.CELERY_TASK_ALWAYS_EAGER:
        threading.Thread(
            target=job_run_in_background, kwargs={"job_id": job_id}, name=f"concord-job-{job_id}", daemon=True
        ).start()
        return
    from generation.tasks import chunk_run_task

    for chunk_id in JobChunk.objects.filter(job_id=job_id, finished_at__isnull=True).values_list("id", flat=True):
        chunk_run_task.delay(chunk_id)


_in_process = threading.Lock()  # one in-process job at a time: they share the model and the global random state


def job_run(*, job_id: int, progress: Callable[[GenerationJob], None] | None = None) -> GenerationJob:
    """Run every unfinished chunk of a job here, in order; stop early when it is cancelled or fails."""
    from generation.services.chunks import chunk_run

    with _in_process:
        for chunk_id in JobChunk.objects.filter(job_id=job_id, finished_at__isnull=True).values_list("id", flat=True):
            try:
                chunk_run(chunk_id=chunk_id)
            except Exception:
                break  # chunk_run recorded the failure on the job
            job = GenerationJob.objects.get(pk=job_id)
            if progress is not None:
                progress(job)
            if job.status not in ACTIVE:
                break
    return job_progress_refresh(job_id=job_id)


def job_run_in_background(*, job_id: int) -> None:
    try:
        job_run(job_id=job_id)
    except Exception:
        logger.exception("in-process generation job %s stopped", job_id)
    finally:
        connections.close_all()  # this thread's connections only (they are per thread)


def job_start(*, job_id: int) -> None:
    """Mark a queued job running (the first chunk to start does it)."""
    GenerationJob.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
        status=JobStatus.RUNNING, started_at=timezone.now()
    )


def job_progress_refresh(*, job_id: int) -> GenerationJob:
    """Recount progress from the stored rows (re-runs never double count); a running job with every row is done."""
    with transaction.atomic():
        job = GenerationJob.objects.select_for_update().get(pk=job_id)
        per_instance = len(job.settings) * job.samples
        generations = Generation.objects.filter(job=job)
        complete = generations.values("instance").annotate(n=Count("id")).filter(n=per_instance).values("instance")
        job.done_generations = generations.count()
        job.done_instances = ProbResult.objects.filter(job=job, instance__in=complete).count()
        fields = ["done_generations", "done_instances"]
        if (
            job.status == JobStatus.RUNNING
            and job.done_instances == job.total_instances
            and job.done_generations == job.total_generations
        ):
            job.status = JobStatus.DONE
            job.finished_at = timezone.now()
            fields += ["status", "finished_at"]
        job.save(update_fields=fields)
    return job


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


def job_fail(*, job_id: int, error: BaseException | str) -> None:
    """Record a failure with its traceback; a cancelled or finished job keeps its status."""
    if isinstance(error, BaseException):
        error = "".join(traceback.format_exception(error))
    GenerationJob.objects.filter(pk=job_id, status__in=ACTIVE).update(
        status=JobStatus.FAILED, error=error, finished_at=timezone.now()
    )
