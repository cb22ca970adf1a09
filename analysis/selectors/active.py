"""Spending people's labels where they count in the report (docs/domain.md, the section of that name), for pools drawn
from a generation job that a judge run has labelled:

- `active_rates`: an active pool's estimate of the positive rate per model x dataset x pronoun (and pronoun "all"),
  beside the people-only Horvitz-Thompson estimate;
- `stratified_ppi`: a uniform pool's stratified PPI over pronoun families per model x dataset, beside the
  unstratified PPI++ estimate;
- `label_budget`: the pool as a pilot: how many contexts people must label for an interval of half-width 0.02,
  0.05, 0.10, alone, with the judge (PPI++) and with an active draw;
- `active_inclusion`: each drawn context of an active pool with its inclusion probability and the judge's Yhat.

The unit is a context (instance x setting), Y and Yhat as in "The judge's verdict" (analysis/selectors/verdict.py):
Y the share of a context's labelled pool samples that people labelled positive, Yhat the judge's mean probability of
the positive label over the same samples (for a context with no label, over all its samples). Only study items count;
the human label is the verdict's (adjudicated, else the majority, a tie left out).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from analysis.metrics.active import HALF_WIDTHS, active_mean, active_n, people_n, ppi_n, stratified_ppi
from analysis.metrics.verdict import ppi_mean
from analysis.report.machine_types import ActiveInclusionRow, ActiveRateRow, LabelBudgetRow, StratifiedPpiRow
from analysis.selectors.verdict import PPI_ALPHA, HumanSide, human_side, positives_of
from annotation.labelset import rate_positive
from annotation.models import STUDY, Pool, PoolItem
from common.frames import pd
from generation.datasets.labels import dataset_label
from judging.models import JudgeMode, JudgeRun, MachineLabel
from judging.scoring import option_probabilities
from judging.selectors import covering_runs

Context = tuple[int, str]  # instance, setting


@dataclass
class Unit:
    """One context of the job: its pronoun, the judge's probability of each judged sample, and of its pool samples
    with a human label the pairs (Y sample, Yhat sample); `pi` its inclusion probability where the pool holds it."""

    pronoun: str
    judged: list[float] = field(default_factory=list)
    labelled: list[tuple[float, float]] = field(default_factory=list)
    in_pool: bool = False
    pi: float | None = None

    @property
    def yhat(self) -> float:
        """Yhat over every judged sample (the unlabelled contexts' Yhat, and the draw's)."""
        return float(np.mean(self.judged))

    @property
    def y(self) -> float:
        return float(np.mean([h for h, _ in self.labelled]))

    @property
    def yhat_labelled(self) -> float:
        """Yhat over the samples with a human label (a labelled context's Yhat in PPI)."""
        return float(np.mean([p for _, p in self.labelled]))


def _job_units(*, run: JudgeRun, pool: Pool, side: HumanSide, positive: str | frozenset[str]) -> dict[Context, Unit]:
    """The run's job's contexts in order (instance, setting), each with what the judge and the pool's people said:
    Yhat the judge's probability of the positive label (of the labels at or above a threshold, summed)."""
    assert run.source_job_id is not None  # the drawing run is a run over the pool's job
    options = run.judge.option_map
    positives = positives_of(positive)
    units: dict[Context, Unit] = {}
    probability: dict[int, tuple[Context, float]] = {}
    rows = (
        MachineLabel.objects.filter(run=run, generation__isnull=False)
        .order_by("generation__instance_id", "generation__setting", "generation__sample_index", "generation_id")
        .values_list("generation_id", "label", "scores", "generation__instance_id", "generation__setting",
                     "generation__instance__pronoun")
    )  # fmt: skip
    for generation_id, label, scores, instance_id, setting, pronoun in rows:
        if run.mode == JudgeMode.IMPORTED and not scores:
            value = float(label in positives)
        else:
            probabilities = option_probabilities(run.mode, options, scores)
            value = float(sum(probabilities[option] for option in positives if option in probabilities))
        key = (instance_id, setting)
        units.setdefault(key, Unit(pronoun)).judged.append(value)
        probability[generation_id] = (key, value)
    items = PoolItem.objects.filter(pool=pool, kind=STUDY, generation__job_id=run.source_job_id).values_list(
        "id", "generation_id", "inclusion_probability"
    )
    for item_id, generation_id, pi in items:
        if generation_id not in probability:
            continue
        key, value = probability[generation_id]
        unit = units[key]
        unit.in_pool = True
        unit.pi = pi
        human = side.positive(item_id, positive)
        if human is not None:
            unit.labelled.append((human, value))
    return units


def _strata(units: dict[Context, Unit], job_pronouns: list[str]) -> list[tuple[str, list[Unit]]]:
    """Per pronoun of the job (in the job's order) its units, then pronoun "all"."""
    present = {unit.pronoun for unit in units.values()}
    out = [(p, [u for u in units.values() if u.pronoun == p]) for p in job_pronouns if p in present]
    return [*out, ("all", list(units.values()))] if units else out


def _ppi_vectors(units: list[Unit]) -> tuple[list[float], list[float], list[float]]:
    """The verdict's PPI Y and Yhat of the labelled contexts, and Yhat of the others."""
    labelled = [u for u in units if u.labelled]
    return ([u.y for u in labelled], [u.yhat_labelled for u in labelled], [u.yhat for u in units if not u.labelled])


def _job_runs(pool: Pool, runs: list[JudgeRun] | None) -> list[JudgeRun]:
    runs = covering_runs(pool=pool) if runs is None else runs
    return [run for run in runs if run.source_job_id is not None and run.judge.option_map]


def _head(run: JudgeRun) -> dict:
    job = run.source_job
    assert job is not None
    return {"judge": run.judge.name, "run": run.pk, "model": job.model.name, "dataset": dataset_label(job.dataset)}


def _active_run(pool: Pool) -> tuple[JudgeRun, str | frozenset[str]] | None:
    """The judge run an active pool was drawn with (over a job, giving the positive label) and what the rates count
    (`annotation.labelset.rate_positive`); None for a pool that is not active, or whose run cannot give its rates."""
    positive = rate_positive(pool)
    if pool.active_run_id is None or positive is None:
        return None
    run = (
        JudgeRun.objects.select_related("judge", "job", "source_job__model", "source_job__generation_run__dataset")
        .filter(pk=pool.active_run_id)
        .first()
    )
    if run is None or run.source_job is None or not positives_of(positive) & set(run.judge.option_map):
        return None
    return run, positive


# --- active rates ---------------------------------------------------------------------------------------------------


def active_rates(*, pool: Pool, frame: pd.DataFrame) -> list[ActiveRateRow]:
    """An active pool's rates with the run that drew it: per pronoun of the job, then pronoun "all" (the
    active estimate and the Horvitz-Thompson people-only one). Empty for a pool that is not active."""
    drawn = _active_run(pool)
    if drawn is None:
        return []
    run, positive = drawn
    side = human_side(frame=frame, labels=list(pool.labels), scale=pool.scale)
    units = _job_units(run=run, pool=pool, side=side, positive=positive)
    rows = []
    job = run.source_job
    assert job is not None  # _active_run gives runs over a job only
    for pronoun, members in _strata(units, list(job.generation_run.pronouns)):
        figures = active_mean(
            yhat=[u.yhat for u in members],
            y=[u.y if u.labelled else math.nan for u in members],
            drawn=[u.in_pool for u in members],
            pi=[u.pi if u.in_pool and u.pi is not None else 1.0 for u in members],
            alpha=PPI_ALPHA,
        )
        rows.append({**_head(run), "pronoun": pronoun, **figures})
    return cast(list[ActiveRateRow], rows)


def active_inclusion(*, pool: Pool) -> list[ActiveInclusionRow]:
    """Each drawn context of an active pool: its inclusion probability and the judge's Yhat (the draw's)."""
    drawn = _active_run(pool)
    if drawn is None:
        return []
    run, positive = drawn
    units = _job_units(run=run, pool=pool, side=HumanSide({}, {}), positive=positive)
    head = _head(run)
    rows = [
        {"model": head["model"], "dataset": head["dataset"], "pronoun": u.pronoun, "yhat": u.yhat,
         "inclusion_probability": float(u.pi)}
        for u in units.values() if u.in_pool and u.pi is not None
    ]  # fmt: skip
    return cast(list[ActiveInclusionRow], rows)


# --- stratified PPI -------------------------------------------------------------------------------------------------


def stratified_ppi_rows(
    *, pool: Pool, frame: pd.DataFrame, runs: list[JudgeRun] | None = None
) -> list[StratifiedPpiRow]:
    """Per run over one of the pool's jobs (model x dataset): stratified PPI over the job's pronoun families beside
    the unstratified PPI++ estimate. A uniform draw's estimate: an active pool has `active_rates` instead."""
    positive = rate_positive(pool)
    if positive is None or pool.active_run_id is not None:
        return []
    side = human_side(frame=frame, labels=list(pool.labels), scale=pool.scale)
    rows = []
    for run in _job_runs(pool, runs):
        if not positives_of(positive) & set(run.judge.option_map):
            continue
        units = _job_units(run=run, pool=pool, side=side, positive=positive)
        strata = _strata(units, list(run.source_job.generation_run.pronouns) if run.source_job else [])
        if not strata:
            continue
        combined = stratified_ppi(
            [(pronoun, *_ppi_vectors(members)) for pronoun, members in strata if pronoun != "all"], alpha=PPI_ALPHA
        )
        y, yhat, unlabelled = _ppi_vectors(list(units.values()))
        plain = ppi_mean(y=y, yhat=yhat, yhat_unlabelled=unlabelled, alpha=PPI_ALPHA)
        rows.append({**_head(run), "rate": combined["rate"], "ci": combined["ci"],
                     "ci_clipped": combined["ci_clipped"], "ppi_rate": plain["ppi_rate"], "ppi_ci": plain["ppi_ci"],
                     "ppi_ci_clipped": plain["ci_clipped"], "n": len(y), "N": len(units),
                     "strata": combined["strata"]})  # fmt: skip
    return cast(list[StratifiedPpiRow], rows)


# --- the budget planner ---------------------------------------------------------------------------------------------


def label_budget(*, pool: Pool, frame: pd.DataFrame, runs: list[JudgeRun] | None = None) -> list[LabelBudgetRow]:
    """The pool as a pilot, per run over one of its jobs (model x dataset, pronoun "all"), per half-width: the
    contexts people must label alone, with the judge (PPI++) and with an active draw. An active pilot's labels are
    weighted by 1 / pi in the active figure."""
    positive = rate_positive(pool)
    if positive is None:
        return []
    side = human_side(frame=frame, labels=list(pool.labels), scale=pool.scale)
    rows = []
    for run in _job_runs(pool, runs):
        if not positives_of(positive) & set(run.judge.option_map):
            continue
        units = _job_units(run=run, pool=pool, side=side, positive=positive)
        y, yhat, unlabelled = _ppi_vectors(list(units.values()))
        if len(y) < 2:
            continue
        labelled = [u for u in units.values() if u.labelled]
        pis = [u.pi for u in labelled if u.pi]
        weight = [1 / pi for pi in pis] if pool.active_run_id is not None and len(pis) == len(labelled) else None
        everyone = [u.yhat for u in units.values()]
        for half_width in HALF_WIDTHS:
            rows.append({
                **_head(run), "pronoun": "all", "half_width": half_width,
                "n_people": people_n(y=y, half_width=half_width, alpha=PPI_ALPHA),
                "n_ppi": ppi_n(y=y, yhat=yhat, yhat_unlabelled=unlabelled, half_width=half_width, alpha=PPI_ALPHA),
                "n_active": active_n(yhat_all=everyone, y=[u.y for u in labelled], yhat=[u.yhat for u in labelled],
                                     half_width=half_width, pilot_weight=weight, alpha=PPI_ALPHA),
                "pilot_n": len(y), "N": len(units),
            })  # fmt: skip
    return cast(list[LabelBudgetRow], rows)


def _count(value: object) -> str:
    return "out of reach" if value == "unreachable" else ("not known" if value is None else f"about {value}")


def budget_sentences(*, report: dict, half_width: float = 0.05) -> list[str]:
    """The planner in plain words, one sentence per model x dataset x judge at +-5 points."""
    sentences = []
    for row in report.get("label_budget") or []:
        if row["half_width"] != half_width:
            continue
        sentences.append(
            f"For ±{half_width * 100:g} points on {row['model']} ({row['dataset']}): {_count(row['n_people'])} contexts "
            f"from people alone, {_count(row['n_ppi'])} with the judge {row['judge']} (prediction-powered), "
            f"{_count(row['n_active'])} with an active draw (from a pilot of {row['pilot_n']} labelled contexts of "
            f"{row['N']})."
        )
    return sentences
