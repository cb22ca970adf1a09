"""The repetition-rate cache: each generation's rate, computed once and kept (appendix I). Generation jobs fill it as
each chunk finishes (analysis/tasks.py), and a report fills it first (analysis/services.py). Kept apart from the
report's code so that a Celery worker, which imports every task at start-up, does not import scipy and pandas."""

from __future__ import annotations

from django.db import transaction

from analysis.metrics.repetition import repetition_rate
from analysis.models import RepetitionRate
from generation.heuristic import tokens
from generation.models import Generation

FILL_BATCH = 5000


def repetition_rates_fill(*, job_ids: list[int], instance_ids: list[int] | None = None) -> int:
    """Compute and store the repetition rate of every generation of these jobs that has none yet. The text is the
    stored generation as the released files keep it, context + continuation (appendix I rates "generations" as
    stored, which is why RUFF's repeated occupations raise its rates); spaCy tokens, lower-cased.
    Safe to run twice; returns how many were added. Generation jobs call it as each chunk finishes."""
    generations = Generation.objects.filter(job_id__in=job_ids)
    rates = RepetitionRate.objects.filter(job_id__in=job_ids)
    if instance_ids is not None:
        generations = generations.filter(instance_id__in=instance_ids)
        rates = rates.filter(generation__instance_id__in=instance_ids)
    # Counting both sides is an index-only scan; the anti-join below reads every generation, so skip it when complete.
    if generations.count() == rates.count():
        return 0
    missing = (
        generations.filter(repetition__isnull=True)
        .order_by()
        .values_list("id", "job_id", "setting", "instance__pronoun", "context", "continuation")
    )
    added = 0
    batch: list[RepetitionRate] = []
    for generation_id, job_id, setting, pronoun, context, continuation in missing.iterator(chunk_size=FILL_BATCH):
        rate = repetition_rate(tokens(context + continuation))
        batch.append(
            RepetitionRate(generation_id=generation_id, job_id=job_id, setting=setting, pronoun=pronoun, rate=rate)
        )
        if len(batch) >= FILL_BATCH:
            added += _store(batch)
            batch = []
    if batch:
        added += _store(batch)
    return added


def _store(batch: list[RepetitionRate]) -> int:
    with transaction.atomic():
        RepetitionRate.objects.bulk_create(batch, ignore_conflicts=True)
    return len(batch)
