"""Writes of the analysis app: the repetition-rate cache, and building a report (which fills that cache first and is
itself cached per data version)."""

from __future__ import annotations

from django.core.cache import cache
from django.db import transaction

from analysis.metrics import repetition_rate
from analysis.models import RepetitionRate
from analysis.selectors.automatic import pool_job_ids
from analysis.selectors.examples import EXAMPLES_SEED
from analysis.selectors.report import report_data, report_data_version
from analysis.selectors.verdict import VerdictParameters, verdict_parameters
from annotation.models import Pool
from generation.heuristic import tokens
from generation.models import Generation

FILL_BATCH = 5000
REPORT_CACHE_SECONDS = 24 * 3600


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


def report_build(
    *,
    pool: Pool,
    examples_seed: int = EXAMPLES_SEED,
    human_verdict: str | None = None,
    epsilon: float | None = None,
    alpha: float | None = None,
    delta: float | None = None,
) -> dict:
    """The report of a pool; the CLI, the API and the pages all come through here. `examples_seed` seeds the draw of
    the qualitative examples (the paper's 131719 by default).

    Built reports are kept in Django's cache under the pool's data version (`report_data_version`: one query), so
    while nothing in the pool changes every page, download and figure is served without recomputing; a new
    annotation, adjudication, import or job progress is a new version and the next request builds afresh. Callers
    get their own copy, so changing it does not change the cached report. `human_verdict` picks the human label
    compared with the heuristic (`analysis.selectors.human.HUMAN_VERDICTS`; None: the default rule). `epsilon`,
    `alpha` and `delta` are the judge's verdict's parameters (None: 0.15, 0.1, 0.1); out of range raises ValueError
    before anything is built or cached."""
    parameters = verdict_parameters(epsilon=epsilon, alpha=alpha, delta=delta)
    key = _report_cache_key(pool=pool, examples_seed=examples_seed, human_verdict=human_verdict, verdict=parameters)
    report = cache.get(key)
    if report is None:
        report = report_build_uncached(
            pool=pool, examples_seed=examples_seed, human_verdict=human_verdict, verdict=parameters
        )
        cache.set(key, report, timeout=REPORT_CACHE_SECONDS)
    return report


def report_is_cached(
    *,
    pool: Pool,
    examples_seed: int = EXAMPLES_SEED,
    human_verdict: str | None = None,
    epsilon: float | None = None,
    alpha: float | None = None,
    delta: float | None = None,
) -> bool:
    """Whether `report_build` would answer from the cache (the pool's data unchanged since the last build)."""
    parameters = verdict_parameters(epsilon=epsilon, alpha=alpha, delta=delta)
    key = _report_cache_key(pool=pool, examples_seed=examples_seed, human_verdict=human_verdict, verdict=parameters)
    return cache.get(key) is not None


def report_build_uncached(
    *,
    pool: Pool,
    examples_seed: int = EXAMPLES_SEED,
    human_verdict: str | None = None,
    verdict: VerdictParameters | None = None,
) -> dict:
    """Fill the repetition rates of the pool's jobs, then compute every section of the report."""
    repetition_rates_fill(job_ids=pool_job_ids(pool=pool))
    return report_data(pool=pool, examples_seed=examples_seed, human_verdict=human_verdict, verdict=verdict)


def _report_cache_key(
    *, pool: Pool, examples_seed: int, human_verdict: str | None = None, verdict: VerdictParameters | None = None
) -> str:
    human = human_verdict or "default"
    v = verdict or VerdictParameters()
    parameters = f"{v.epsilon!r}:{v.alpha!r}:{v.delta!r}"
    return f"concord:report-data:{pool.pk}:{examples_seed}:{human}:{parameters}:{report_data_version(pool=pool)}"
