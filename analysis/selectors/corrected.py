"""The judge's bias-corrected rates in the report (docs/domain.md, "Judges a reviewer trusts": bias-corrected
rate), beside PPI++ (analysis/selectors/verdict.py's `prediction_powered`) and over the same strata and units.

Per run covering the pool and per stratum (model x dataset x pronoun, then pronoun "all"): the unit is a context,
as for PPI++. A labelled context gives its pool samples with a human label (people's label and the judge's); an
unlabelled one (the job's other contexts; a pool without a job: the pool's contexts nobody labelled) every judged
sample. A sample the judge gave no label (a tie of a panel, an answer naming no option) is left out.
"""

from __future__ import annotations

from collections import defaultdict
from typing import cast

from analysis.metrics.rates import corrected_rate
from analysis.report.machine_types import CorrectedRateRow
from analysis.selectors.verdict import HumanSide, human_side, positives_of
from annotation.labelset import rate_positive
from annotation.models import STUDY, Pool, PoolItem
from common.frames import pd
from generation.datasets.labels import dataset_label
from judging.models import JudgeRun, MachineLabel
from judging.selectors import covering_runs, run_pool_labels

# A stratum's contexts: context key -> [(the judge's label, whether people call it positive: 1.0, 0.0 or None)] of
# its samples.
Contexts = dict[tuple, list[tuple[str, float | None]]]


def _row(
    *, run: JudgeRun, model: str, dataset: str, pronoun: str, contexts: Contexts, positive: frozenset[str]
) -> dict:
    labelled, unlabelled = [], []
    # In the contexts' own order (instance id, then setting; a pool without a job: its texts), never by ids' digits,
    # so that the bootstrap draws the same units after a bundle is imported under new ids.
    for _, samples in sorted(contexts.items()):
        known = [(judged, human) for judged, human in samples if human is not None]
        if known:
            labelled.append(([int(human) for _, human in known], [int(judged in positive) for judged, _ in known]))
        else:
            unlabelled.append([int(judged in positive) for judged, _ in samples])
    figures = corrected_rate(labelled=labelled, unlabelled=unlabelled)
    return {"judge": run.judge.name, "run": run.pk, "model": model, "dataset": dataset, "pronoun": pronoun, **figures}


def _job_contexts(
    *, run: JudgeRun, pool: Pool, side: HumanSide, positive: str | frozenset[str]
) -> tuple[Contexts, dict[tuple, str]]:
    """A run over a job: context (instance, setting) -> its samples, and each context's pronoun."""
    human_of: dict[int, float] = {}
    items = PoolItem.objects.filter(pool=pool, kind=STUDY, generation__job_id=run.source_job_id or 0)
    for item_id, generation_id in items.values_list("id", "generation_id"):
        human = side.positive(item_id, positive)
        if human is not None:
            human_of[generation_id] = human
    contexts: Contexts = defaultdict(list)
    pronoun_of: dict[tuple, str] = {}
    rows = (
        MachineLabel.objects.filter(run=run, generation__isnull=False)
        .exclude(label="")
        .order_by("generation_id")
        .values_list("generation_id", "label", "generation__instance_id", "generation__setting",
                     "generation__instance__pronoun")
    )  # fmt: skip
    for generation_id, label, instance_id, setting, pronoun in rows:
        key = (instance_id, setting)
        contexts[key].append((label, human_of.get(generation_id)))
        pronoun_of[key] = pronoun
    # A labelled context counts its labelled samples only (as PPI++ does): drop its others.
    for key, samples in contexts.items():
        if any(human is not None for _, human in samples):
            contexts[key] = [sample for sample in samples if sample[1] is not None]
    return contexts, pronoun_of


def run_rates_corrected(*, run: JudgeRun, pool: Pool, side: HumanSide, positive: str | frozenset[str]) -> list[dict]:
    """The rows of one run: per pronoun, then pronoun "all", per model x dataset. `positive`: what the rates count
    (`annotation.labelset.rate_positive`)."""
    positives = positives_of(positive)
    if not positives & set(run.judge.option_map):
        return []
    strata: dict[tuple[str, str], dict[str, Contexts]] = defaultdict(lambda: defaultdict(dict))
    if run.source_job_id is not None:
        job = run.source_job
        assert job is not None
        contexts, pronoun_of = _job_contexts(run=run, pool=pool, side=side, positive=positive)
        order = list(job.generation_run.pronouns)
        cell = (job.model.name, dataset_label(job.dataset))
        for key, samples in contexts.items():
            strata[cell][pronoun_of[key]][key] = samples
    else:
        judged = {row.item_id: row.label for row in run_pool_labels(run=run, pool=pool) if row.label}
        fields = ("id", "model_name", "dataset", "setting", "pronoun", "context")
        grouped: Contexts = defaultdict(list)
        for item_id, model, dataset, setting, pronoun, context in (
            PoolItem.objects.filter(pool=pool, kind=STUDY).order_by("id").values_list(*fields)
        ):
            if item_id in judged:
                grouped[(model, dataset, pronoun or "", setting, context)].append(
                    (judged[item_id], side.positive(item_id, positive))
                )
        for key, samples in grouped.items():
            strata[(key[0], key[1])][key[2]][key] = samples
        order = sorted({pronoun for cell in strata.values() for pronoun in cell if pronoun})
    out = []
    for (model, dataset), by_pronoun in sorted(strata.items()):
        for pronoun in [p for p in order if p in by_pronoun]:
            out.append(_row(run=run, model=model, dataset=dataset, pronoun=pronoun, contexts=by_pronoun[pronoun],
                            positive=positives))  # fmt: skip
        every = {key: samples for contexts in by_pronoun.values() for key, samples in contexts.items()}
        out.append(_row(run=run, model=model, dataset=dataset, pronoun="all", contexts=every, positive=positives))
    return out


def rates_corrected(*, pool: Pool, frame: pd.DataFrame, runs: list[JudgeRun] | None = None) -> list[CorrectedRateRow]:
    """One row per run x model x dataset x pronoun (and pronoun "all"), over the runs and strata of
    `prediction_powered`: runs over the pool's generation jobs, or, on a pool without a job, runs over the pool. The
    rate is the pool's positive label's, or the share at or above its threshold; none without either. An active pool has none (its draw is not uniform)."""
    runs = covering_runs(pool=pool) if runs is None else runs
    positive = rate_positive(pool)
    if not runs or positive is None or pool.active_run_id is not None:
        return []
    without_job = not pool.jobs.exists()
    side = human_side(frame=frame, labels=list(pool.labels), scale=pool.scale)
    rows: list[dict] = []
    for run in runs:
        if run.source_job_id is not None or without_job:
            rows += run_rates_corrected(run=run, pool=pool, side=side, positive=positive)
    return cast(list[CorrectedRateRow], rows)
