"""Writes of the analysis app: building a report, which first fills the repetition-rate cache
(analysis/repetition.py) and is itself cached under the pool's change stamp."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import cache
from django.db import IntegrityError, transaction

from accounts.models import Project
from analysis.metrics.verdict import selective_threshold
from analysis.repetition import repetition_rates_fill
from analysis.report.build import report_data
from analysis.selectors.automatic import pool_job_ids
from analysis.selectors.examples import EXAMPLES_SEED
from analysis.selectors.human import pool_item_frame
from analysis.selectors.quality import quality_dashboard
from analysis.selectors.verdict import DEFAULT_ALPHA, DEFAULT_DELTA, VerdictParameters, human_side, verdict_parameters
from annotation.models import Pool, PoolItem
from annotation.services.pool import pool_items_from_generations
from annotation.services.stamp import pool_changed, pool_stamp
from common.audit import CREATE, audit_record
from common.errors import ServiceError
from generation.models import Generation
from judging.models import JudgeRun, MachineLabel
from judging.selectors import run_pool_labels

REPORT_CACHE_SECONDS = 24 * 3600
# Bump when a change to the report's code changes its output, so that a shared cache (Redis) drops old reports.
REPORT_FORMAT = 5
QUALITY_FORMAT = 1  # bumped when the dashboard's shape or figures change, so no cached one of the old kind answers


def report_build(
    *,
    pool: Pool,
    examples_seed: int = EXAMPLES_SEED,
    human_verdict: str | None = None,
    epsilon: float | None = None,
    alpha: float | None = None,
    delta: float | None = None,
    q: float | None = None,
    min_items: int | None = None,
) -> dict:
    """The report of a pool; the CLI, the API and the pages all come through here. `examples_seed` seeds the draw of
    the qualitative examples (the paper's 131719 by default).

    Built reports are kept in Django's cache under the pool's data version (`report_data_version`: the pool's change
    stamp, one indexed read), so while nothing in the pool changes every page, download and figure is served without
    recomputing; a new annotation, adjudication, import, judge label or job progress bumps the stamp
    (annotation/services/stamp.py) and the next request builds afresh. Callers
    get their own copy, so changing it does not change the cached report. `human_verdict` picks the human label
    compared with the heuristic (`analysis.selectors.human.HUMAN_VERDICTS`; None: the default rule). `epsilon`,
    `alpha`, `delta`, `q` and `min_items` are the judge's verdict's parameters (None: 0.15, 0.1, 0.1, 0.05, 30); out
    of range raises ValueError before anything is built or cached."""
    parameters = verdict_parameters(epsilon=epsilon, alpha=alpha, delta=delta, q=q, min_items=min_items)
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
    q: float | None = None,
    min_items: int | None = None,
) -> bool:
    """Whether `report_build` would answer from the cache (the pool's data unchanged since the last build)."""
    parameters = verdict_parameters(epsilon=epsilon, alpha=alpha, delta=delta, q=q, min_items=min_items)
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
    parameters = f"{v.epsilon!r}:{v.alpha!r}:{v.delta!r}:{v.q!r}:{v.min_items!r}"
    return f"concord:report-data:{pool.pk}:{examples_seed}:{human}:{parameters}:{report_data_version(pool=pool)}"


def report_data_version(*, pool: Pool) -> str:
    """What the report cache is keyed by besides the request's parameters: the report code's format and the pool's
    change stamp (`pool_stamp`), which every write that changes what a report reads bumps. Repetition rates are left
    out: `report_build` fills them for every generation before it builds, so they follow the jobs' progress."""
    return f"{REPORT_FORMAT}:{pool_stamp(pool=pool)}"


def quality_dashboard_cached(*, pool: Pool) -> dict:
    """`quality_dashboard`, kept in Django's cache under the pool's data version (`report_data_version`, the report
    cache's key: one indexed read) and the pool's pass mark and fast threshold: the page and its poll every few seconds
    compute it again only when something changed (a crowd study's 240,000 annotations take seconds to read). Callers
    must not change what it returns."""
    key = (
        f"concord:quality:{QUALITY_FORMAT}:{pool.pk}:{pool.pass_mark!r}:{pool.fast_seconds!r}:"
        f"{report_data_version(pool=pool)}"
    )
    data = cache.get(key)
    if data is None:
        data = quality_dashboard(pool=pool)
        cache.set(key, data, timeout=REPORT_CACHE_SECONDS)
    return data


# --- escalation (docs/domain.md, 'The judge's verdict': selective judging) --------------------------------------------


class EscalationError(ServiceError, ValueError):
    """The escalation cannot be made as asked; nothing was written."""


@dataclass
class Escalation:
    """What `pool_escalate` did: the threshold calibrated on the pool's human labels, how many generations the judge
    abstains on (outside the pool), the new pool (None when none was made) and a sentence saying so."""

    threshold: float | None
    calibrated_on: int
    abstained: int
    pool: Pool | None
    message: str


def pool_escalate(
    *,
    pool: Pool,
    run: JudgeRun,
    name: str,
    alpha: float = DEFAULT_ALPHA,
    delta: float = DEFAULT_DELTA,
    created_by=None,
    project: Project | None = None,
) -> Escalation:
    """Escalate to people what the judge abstains on: calibrate the selective threshold (alpha, delta) on `pool`'s
    human labels (docs/domain.md, "The judge's verdict": adjudicated, else the majority, ties left out) against the run's labels, then draw
    a new pool `name` of the run's job's generations whose confidence is below the threshold, leaving out the
    generations `pool` already holds. The new pool keeps `pool`'s label set and is ready to assign. When no
    threshold passes, or no generation is below it, no pool is made and the message says so. Raises EscalationError
    (nothing written) for a run that is not over one of the pool's generation jobs, an unfinished run, bad alpha or
    delta, or a name that is taken. The new pool belongs to `project` (None: `pool`'s own project)."""
    from django.utils.text import slugify

    try:
        parameters = verdict_parameters(alpha=alpha, delta=delta)
    except ValueError as error:
        raise EscalationError(str(error)) from None
    job = run.source_job
    if job is None:
        raise EscalationError(
            f"run {run.pk} judged pool {run.pool}, not a generation job; escalate from a run over a job"
        )
    if not pool.jobs.filter(pk=job.pk).exists():
        raise EscalationError(f"pool {pool.name} was not drawn from job {job.pk}, which run {run.pk} judged")
    if run.state != "done":
        raise EscalationError(f"run {run.pk} is {run.state}; escalate once it is done")
    if not name or slugify(name) != name:
        raise EscalationError(f"a pool's name is a slug (letters, digits, - and _), got {name!r}")
    limit = Pool._meta.get_field("name").max_length or 64
    if len(name) > limit:
        raise EscalationError(f"a pool's name has at most {limit} characters, got {len(name)}")
    if Pool.objects.filter(name=name).exists():
        raise EscalationError(_name_taken(name))
    side = human_side(frame=pool_item_frame(pool=pool))
    pairs = [
        (row.confidence, row.label == side.label[row.item_id])
        for row in run_pool_labels(run=run, pool=pool)
        if row.label and row.confidence is not None and side.label.get(row.item_id) is not None
    ]
    selective = selective_threshold(
        confidences=[c for c, _ in pairs], agree=[a for _, a in pairs], alpha=parameters.alpha, delta=parameters.delta
    )
    threshold = selective["threshold"]
    if threshold is None:
        return Escalation(
            None, len(pairs), 0, None,
            f"No threshold passed at alpha {parameters.alpha:g}, delta {parameters.delta:g} on {len(pairs)} labelled "
            f"items of {pool.name}: the judge cannot keep any generation with this guarantee. No pool was made.",
        )  # fmt: skip
    held = set(PoolItem.objects.filter(pool=pool, generation__isnull=False).values_list("generation_id", flat=True))
    below = [
        generation_id
        for generation_id in MachineLabel.objects.filter(run=run, confidence__lt=threshold)
        .order_by("generation_id")
        .values_list("generation_id", flat=True)
        if generation_id not in held
    ]
    if not below:
        return Escalation(
            threshold, len(pairs), 0, None,
            f"No generation of job {job.pk} outside {pool.name} is below the threshold {threshold:.4f}: the judge "
            "keeps them all. No pool was made.",
        )  # fmt: skip
    generations = Generation.objects.select_related("instance").in_bulk(below)
    try:
        new = _escalated_pool_write(
            name=name, source=pool, run=run, generations=[generations[pk] for pk in below], threshold=threshold,
            parameters=parameters, calibrated_on=len(pairs), created_by=created_by,
            project=project if project is not None else pool.project,
        )  # fmt: skip
    except IntegrityError:
        # Another request made a pool of this name since the check above (two researchers, or one double click):
        # the unique name refused this one's row, and the transaction took everything of it back.
        if Pool.objects.filter(name=name).exists():
            raise EscalationError(_name_taken(name)) from None
        raise
    return Escalation(
        threshold, len(pairs), len(below), new,
        f"Pool {name}: {len(below)} generations of job {job.pk} below the threshold {threshold:.4f} (calibrated on "
        f"{len(pairs)} labelled items of {pool.name} at alpha {parameters.alpha:g}, delta {parameters.delta:g}), "
        "ready to assign.",
    )  # fmt: skip


def _name_taken(name: str) -> str:
    return f"a pool named {name!r} already exists; choose another name"


def _escalated_pool_write(
    *,
    name: str,
    source: Pool,
    run: JudgeRun,
    generations: list[Generation],
    threshold: float,
    parameters: VerdictParameters,
    calibrated_on: int,
    created_by,
    project: Project,
) -> Pool:
    """The new pool, its items and its audit entry, in one transaction (all of it, or nothing)."""
    job = run.source_job
    assert job is not None
    with transaction.atomic():
        new = Pool.objects.create(name=name, labels=list(source.labels), created_by=created_by, project=project)
        new.jobs.set([job])
        audit_record(
            event="pool.escalate",
            obj=new,
            actor=created_by,
            action=CREATE,
            data={
                "from_pool": source.name,
                "run": run.pk,
                "job": job.pk,
                "threshold": threshold,
                "alpha": parameters.alpha,
                "delta": parameters.delta,
                "calibrated_on": calibrated_on,
                "items": len(generations),
            },
        )
        PoolItem.objects.bulk_create(pool_items_from_generations(new, generations, job=job))
        pool_changed(pools=[new])
    return new
