"""Writes of the analysis app: the repetition-rate cache, and building a report (which fills that cache first)."""

from __future__ import annotations

from django.db import transaction

from analysis.metrics import repetition_rate
from analysis.models import RepetitionRate
from analysis.selectors.automatic import pool_job_ids
from analysis.selectors.report import report_data
from annotation.models import Pool
from generation.heuristic import tokens
from generation.models import Generation

FILL_BATCH = 5000


def repetition_rates_fill(*, job_ids: list[int]) -> int:
    """Compute and store the repetition rate of every generation of these jobs that has none yet (over the spaCy
    tokens of the continuation alone, lower-cased). Safe to run twice; returns how many were added."""
    missing = (
        Generation.objects.filter(job_id__in=job_ids, repetition__isnull=True)
        .order_by()
        .values_list("id", "continuation")
    )
    added = 0
    batch: list[RepetitionRate] = []
    for generation_id, continuation in missing.iterator(chunk_size=FILL_BATCH):
        batch.append(RepetitionRate(generation_id=generation_id, rate=repetition_rate(tokens(continuation))))
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


def report_build(*, pool: Pool) -> dict:
    """The report of a pool; the CLI, the API and the pages all come through here."""
    repetition_rates_fill(job_ids=pool_job_ids(pool=pool))
    return report_data(pool=pool)
