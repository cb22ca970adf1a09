"""Running one chunk of a job: probability scoring, then sampling per setting, each step written as it finishes.

Safe to run twice: a step whose rows all exist is skipped; a step with some rows is redone with the same seed (so it
reproduces the same text) and inserted with `ignore_conflicts`, the database's unique constraints keeping one row per
(job, instance) and per (job, instance, setting, sample index). A worker killed mid-chunk therefore loses only the
step it was in.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from generation.contexts import SETTINGS, build_context
from generation.heuristic import heuristic_verdicts
from generation.loading import LoadedModel, model_load
from generation.models import Generation, GenerationJob, Instance, JobChunk, ProbResult
from generation.pronouns import codebook_for
from generation.sampling import Decoding, sample_continuations
from generation.scoring import ScoreItem, score_instances
from generation.services.jobs import ACTIVE, job_fail, job_progress_refresh, job_start


def chunk_seed(*, job_seed: int, chunk_index: int, setting: str) -> int:
    """The seed of one chunk's sampling for one setting: a re-run chunk draws the same numbers."""
    return (job_seed * 1_000_003 + chunk_index * len(SETTINGS) + SETTINGS.index(setting)) % 2**32


def _still_active(job: GenerationJob) -> bool:
    return GenerationJob.objects.filter(pk=job.pk, status__in=ACTIVE).exists()


def _score(job: GenerationJob, loaded: LoadedModel, instances: list[Instance]) -> None:
    scored = set(ProbResult.objects.filter(job=job, instance__in=instances).values_list("instance_id", flat=True))
    todo = [instance for instance in instances if instance.pk not in scored]
    if not todo:
        return
    codebook = codebook_for(job.dataset.kind)
    items = [
        ScoreItem(
            text=instance.text,
            mask=instance.template.mask,
            form=instance.template.form,
            correct_form=instance.correct_form,
            codebook=codebook,
        )
        for instance in todo
    ]
    results = score_instances(loaded=loaded, items=items)
    rows = [
        ProbResult(
            job=job, instance=instance, losses=result.losses, prediction=result.prediction, correct=result.correct
        )
        for instance, result in zip(todo, results, strict=True)
    ]
    with transaction.atomic():
        ProbResult.objects.bulk_create(rows, ignore_conflicts=True)


def _sample(job: GenerationJob, chunk: JobChunk, loaded: LoadedModel, instances: list[Instance], setting: str) -> None:
    existing = Generation.objects.filter(job=job, instance__in=instances, setting=setting).count()
    if existing == len(instances) * job.samples:
        return
    contexts = [
        build_context(instance.text, instance.template.mask, instance.correct_form, setting) for instance in instances
    ]
    decoding = Decoding(
        samples=job.samples,
        max_new_tokens=job.max_new_tokens,
        top_k=job.top_k,
        top_p=job.top_p,
        num_beams=job.num_beams,
    )
    # The whole chunk is sampled again even when some rows exist: the same batch and seed reproduce the same text.
    continuations = sample_continuations(
        loaded=loaded,
        contexts=contexts,
        decoding=decoding,
        seed=chunk_seed(job_seed=job.seed, chunk_index=chunk.index, setting=setting),
        batch_size=len(contexts),
    )
    pairs = [
        (instance, context, index, text)
        for instance, context, texts in zip(instances, contexts, continuations, strict=True)
        for index, text in enumerate(texts)
    ]
    verdicts = heuristic_verdicts(
        ((text, instance.pronoun) for instance, _, _, text in pairs), codebook=codebook_for(job.dataset.kind)
    )
    rows = [
        Generation(
            job=job,
            instance=instance,
            setting=setting,
            sample_index=index,
            context=context,
            continuation=text,
            heuristic_correct=verdict.correct,
            first_pronoun=verdict.first_pronoun or "",
            first_pronoun_offset=verdict.offset,
        )
        for (instance, context, index, text), verdict in zip(pairs, verdicts, strict=True)
    ]
    with transaction.atomic():
        Generation.objects.bulk_create(rows, ignore_conflicts=True)


def chunk_run(*, chunk_id: int) -> GenerationJob:
    """Run one chunk (skipped when its job is no longer queued or running). A failure is recorded and re-raised."""
    chunk = JobChunk.objects.select_related("job__model", "job__dataset").get(pk=chunk_id)
    job = chunk.job
    if job.status not in ACTIVE:
        return job
    job_start(job_id=job.pk)
    JobChunk.objects.filter(pk=chunk.pk).update(attempts=F("attempts") + 1)
    try:
        loaded = model_load(language_model=job.model)
        by_id = Instance.objects.select_related("template").in_bulk(chunk.instance_ids)
        instances = [by_id[instance_id] for instance_id in chunk.instance_ids]
        _score(job, loaded, instances)
        for setting in job.settings:
            job_progress_refresh(job_id=job.pk)
            if not _still_active(job):
                return job_progress_refresh(job_id=job.pk)
            _sample(job, chunk, loaded, instances, setting)
    except Exception as exc:
        job_fail(job_id=job.pk, error=exc)
        raise
    JobChunk.objects.filter(pk=chunk.pk).update(finished_at=timezone.now())
    _repetition_rates_queue(job_id=job.pk, instance_ids=chunk.instance_ids)
    return job_progress_refresh(job_id=job.pk)


def _repetition_rates_queue(*, job_id: int, instance_ids: list[int]) -> None:
    """Reports need every generation's repetition rate; tokenizing them as chunks finish (on the default queue, or
    inline without a broker) keeps a paper-scale report from tokenizing 600k texts on its first request."""
    from analysis.tasks import repetition_rates_fill_task  # analysis reads generation's rows, not the other way

    transaction.on_commit(lambda: repetition_rates_fill_task.delay(job_id, list(instance_ids)))
