"""Reads for the generation pages, API and exports."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from generation.models import (
    Dataset,
    Generation,
    GenerationJob,
    JobChunk,
    JobStatus,
    LanguageModel,
    ProbResult,
    TangoTemplate,
)
from generation.pronouns import Codebook, codebook_for


def job_list() -> QuerySet[GenerationJob]:
    return GenerationJob.objects.select_related("model", "dataset", "created_by").order_by("-created_at", "-id")


def job_get(*, job_id: int) -> GenerationJob | None:
    return job_list().filter(pk=job_id).first()


def dataset_codebook(*, dataset: Dataset) -> Codebook:
    """The codebook stored with the dataset when it was imported (its PronounForm rows): the spellings a job scores
    and checks against are those the dataset was imported with. Anything else the kind's codebook carries is kept."""
    table: dict[str, dict[str, str]] = {}
    for base, form, surface in dataset.pronoun_forms.values_list("base", "form", "surface"):
        table.setdefault(base, {})[form] = surface
    if not table:
        raise ValueError(f"dataset {dataset.name!r} has no stored codebook (pronoun forms); import it again")
    return dataclasses.replace(codebook_for(dataset.kind), table=table)


@dataclasses.dataclass(frozen=True)
class JobTiming:
    elapsed_seconds: float | None  # since the first chunk started (to the end, once it ended)
    eta_seconds: float | None  # time left at this run's pace; None until a generation of this run is stored


def job_timing(*, job: GenerationJob, now: datetime | None = None) -> JobTiming:
    """Elapsed time and the estimate of the time left: the generations still to do at the pace of the current run
    (since its first chunk started, or since the last resume)."""
    now = now or timezone.now()
    if job.started_at is None:
        return JobTiming(elapsed_seconds=None, eta_seconds=None)
    end = job.finished_at if job.status not in (JobStatus.QUEUED, JobStatus.RUNNING) and job.finished_at else now
    elapsed = max((end - job.started_at).total_seconds(), 0.0)
    eta = None
    if job.status == JobStatus.RUNNING and job.run_started_at is not None:
        done_in_run = job.done_generations - job.run_done_at_start
        run_seconds = (now - job.run_started_at).total_seconds()
        left = max(job.total_generations - job.done_generations, 0)
        if left == 0:
            eta = 0.0
        elif done_in_run > 0 and run_seconds > 0:
            eta = left * run_seconds / done_in_run
    return JobTiming(elapsed_seconds=elapsed, eta_seconds=eta)


def job_chunks_live(*, job: GenerationJob) -> bool:
    """Whether a runner holds one of the job's chunks now (a live lease): then a Resume has nothing to take over."""
    from generation.services.leases import chunk_lease_live  # the lease rule lives with the leases

    now = timezone.now()
    chunks = JobChunk.objects.filter(job=job, finished_at__isnull=True).exclude(lease_owner="")
    return any(chunk_lease_live(chunk, now=now) for chunk in chunks)


def job_resumable(*, job: GenerationJob) -> bool:
    """Whether Resume has something to do: a failed or cancelled job, or a running one that no runner works on (its
    runner is gone). A queued job waits for a runner; `resume_jobs` and the embedded server's start pick it up."""
    if job.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        return True
    return job.status == JobStatus.RUNNING and not job_chunks_live(job=job)


def model_list() -> QuerySet[LanguageModel]:
    return LanguageModel.objects.order_by("name")


def job_generations(*, job: GenerationJob, setting: str | None = None) -> QuerySet[Generation]:
    """A job's generations in dataset order, with their instances (for the results page and the export)."""
    rows = Generation.objects.filter(job=job).select_related("instance__template", "instance__dataset")
    if setting:
        rows = rows.filter(setting=setting)
    return rows.order_by("instance__ordinal", "-setting", "sample_index")  # pre before post


def job_prob_results(*, job: GenerationJob, instance_ids) -> dict[int, ProbResult]:
    return {row.instance_id: row for row in ProbResult.objects.filter(job=job, instance_id__in=instance_ids)}


def job_prob_summary(*, job: GenerationJob) -> dict:
    rows = ProbResult.objects.filter(job=job)
    scored = rows.count()
    correct = rows.filter(correct=True).count()
    return {"scored": scored, "correct": correct, "accuracy": correct / scored if scored else None}


EXPORT_COLUMNS = (
    "dataset",
    "model",
    "instance_id",
    "template",
    "pronoun",
    "form",
    "correct_form",
    "setting",
    "sample_index",
    "context",
    "continuation",
    "heuristic_correct",
    "first_pronoun",
    "prob_prediction",
    "prob_correct",
    "tango_template",  # TANGO: the Prob-TANGO template of the generation (empty when it failed)
    "tango_failed",
)


def job_export_rows(*, job: GenerationJob, batch: int = 2000) -> Iterator[dict]:
    """One dict per generation with EXPORT_COLUMNS; prob columns are empty where the instance was not scored."""
    probs = {row.instance_id: row for row in ProbResult.objects.filter(job=job)}
    # TANGO's probability verdict is per generation (Prob-TANGO), not per instance.
    tangos = {row.generation_id: row for row in TangoTemplate.objects.filter(job=job)}
    for generation in job_generations(job=job).iterator(chunk_size=batch):
        instance = generation.instance
        tango = tangos.get(generation.pk)
        prob: ProbResult | TangoTemplate | None = probs.get(instance.pk)
        if tango is not None and not tango.failed:
            prob = tango  # the same prediction and correct fields
        yield {
            "dataset": job.dataset.name,
            "model": job.model.name,
            "instance_id": instance.pk,
            "template": instance.text,
            "pronoun": instance.pronoun,
            "form": instance.template.form,
            "correct_form": instance.correct_form,
            "setting": generation.setting,
            "sample_index": generation.sample_index,
            "context": generation.context,
            "continuation": generation.continuation,
            "heuristic_correct": int(generation.heuristic_correct),
            "first_pronoun": generation.first_pronoun,
            "prob_prediction": prob.prediction if prob else "",
            "prob_correct": int(bool(prob.correct)) if prob else "",
            "tango_template": (tango.template or "") if tango else "",
            "tango_failed": int(tango.failed) if tango else "",
        }
