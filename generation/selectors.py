"""Reads for the generation pages, API and exports."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import QuerySet

from generation.models import Generation, GenerationJob, LanguageModel, ProbResult


def job_list() -> QuerySet[GenerationJob]:
    return GenerationJob.objects.select_related("model", "dataset", "created_by").order_by("-created_at", "-id")


def job_get(*, job_id: int) -> GenerationJob | None:
    return job_list().filter(pk=job_id).first()


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
)


def job_export_rows(*, job: GenerationJob, batch: int = 2000) -> Iterator[dict]:
    """One dict per generation with EXPORT_COLUMNS; prob columns are empty where the instance was not scored."""
    probs = {row.instance_id: row for row in ProbResult.objects.filter(job=job)}
    for generation in job_generations(job=job).iterator(chunk_size=batch):
        instance = generation.instance
        prob = probs.get(instance.pk)
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
            "prob_correct": int(prob.correct) if prob else "",
        }
