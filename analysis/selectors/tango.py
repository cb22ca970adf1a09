"""TANGO and Prob-TANGO figures of a report (docs/domain.md, 'TANGO and Prob-TANGO').

Per model x pronoun (the cell's dataset is "tango" and its setting "open"), over the instances of the pool's TANGO
jobs; an instance's i-th template is the Prob-TANGO rewrite of its i-th generation:

- `tango_failure_rate`: the share of an instance's templates that failed, mean +- SEM (scipy.stats.sem) over
  instances (the paper's figure 11).
- `tango_variation`: sigma_gen (population std of an instance's generation verdicts) and sigma_prob (of its
  successful templates' verdicts; instances where every template failed are dropped), as the share of instances at
  each value and as mean and population std (figure 5).
- `prob_vs_gen` rows: template 1's m_prob against generation 1's m_gen (instances whose template 1 failed dropped),
  the same figures as the other datasets' rows (tables 2 and 5, figure 12).
- `beta_disagreement` rows: the beta fit of d_k from each instance's mean m_prob over its successful templates and
  mean m_gen over its generations (figure 13).

Generations whose Prob-TANGO row is not written yet (a running job) are left out of the Prob-TANGO figures.
"""

from __future__ import annotations

import functools
from typing import cast

import numpy as np

from analysis.cells import CELL
from analysis.metrics import beta_moments, binary_agreement, disagreement_probability, mean_sem, variation_shares
from analysis.report.types import BetaRow, MeanSemRow, ProbVsGenRow, TangoVariationRow
from common.frames import pd
from generation.datasets.tango import TANGO
from generation.models import Generation

COLUMNS = ["job_id", "instance_id", "sample_index", "m_gen", "scored", "failed", "m_prob", "pronoun", "model"]


def tango_frame(*, job_ids: list[int]) -> pd.DataFrame:
    """One row per generation of the TANGO jobs among `job_ids`: m_gen (the heuristic), whether Prob-TANGO has run
    on it (`scored`), `failed`, and m_prob (NaN when failed or not scored), plus the cell columns."""
    rows = list(
        Generation.objects.filter(job_id__in=job_ids, job__generation_run__dataset__kind=TANGO.kind)
        .order_by("job_id", "instance_id", "sample_index")
        .values_list(
            "job_id",
            "instance_id",
            "sample_index",
            "heuristic_correct",
            "tango_template__id",
            "tango_template__failed",
            "tango_template__correct",
            "instance__pronoun",
            "job__model__name",
        )
    )
    return _frame(rows) if rows else _empty_frame().copy()


@functools.cache
def _empty_frame() -> pd.DataFrame:
    """The frame of no TANGO generations (most pools have none), made once: making it costs milliseconds even
    without rows."""
    return _frame([])


def _frame(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(rows, columns=COLUMNS)
    frame["scored"] = frame["scored"].notna()
    frame["failed"] = frame["failed"].astype(object).where(frame["scored"], None)
    frame["m_gen"] = frame["m_gen"].astype(float)
    frame["m_prob"] = pd.to_numeric(frame["m_prob"], errors="coerce").astype(float)
    frame["dataset"] = TANGO.kind.value
    frame["setting"] = "open"
    return frame


def _instances(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per job x instance: generation counts and successes, template counts (scored, failed, successful)
    and m_prob successes, template 1's and generation 1's verdicts."""
    scored = frame[frame["scored"]]
    ok = scored[scored["failed"] == False]  # noqa: E712 - an object column holding True/False/None
    keys = ["job_id", "instance_id", *CELL]
    grouped = frame.groupby(keys, sort=True)
    out = grouped.agg(samples=("m_gen", "size"), gen_correct=("m_gen", "sum")).reset_index()
    templates = scored.groupby(keys).agg(templates=("failed", "size"), failed=("failed", "sum")).reset_index()
    successes = ok.groupby(keys).agg(successful=("m_prob", "size"), prob_correct=("m_prob", "sum")).reset_index()
    firsts = frame[frame["sample_index"] == 0][[*keys, "m_gen", "m_prob", "failed", "scored"]].rename(
        columns={"m_gen": "gen_first", "m_prob": "prob_first", "failed": "first_failed", "scored": "first_scored"}
    )
    for extra in (templates, successes, firsts):
        out = out.merge(extra, on=keys, how="left")
    for column in ("templates", "failed", "successful", "prob_correct"):
        out[column] = out[column].fillna(0).astype(int)
    return out


def _cells(instances: pd.DataFrame):
    for cell, group in instances.groupby(CELL, sort=True):
        yield dict(zip(CELL, cell, strict=True)), group


def tango_failure_rate(*, frame: pd.DataFrame | None) -> list[MeanSemRow]:
    """Per cell: the mean and SEM over instances of the share of their templates that failed."""
    if frame is None or frame.empty:
        return []
    instances = _instances(frame)
    rows = []
    for cell, group in _cells(instances[instances["templates"] > 0]):
        rates = (group["failed"] / group["templates"]).to_numpy(float)
        figures = mean_sem(rates)
        rows.append({**cell, "mean": figures["mean"], "sem": figures["sem"], "n": int(rates.size)})
    return cast(list[MeanSemRow], rows)


def _population_std(correct: np.ndarray, count: np.ndarray) -> np.ndarray:
    p = correct / count
    return np.sqrt(p * (1 - p))


def tango_variation(*, frame: pd.DataFrame | None) -> list[TangoVariationRow]:
    """Per cell: sigma_gen and sigma_prob as shares of instances at each value, with their mean and population std;
    both over the same instances, those with at least one template that did not fail (an instance whose templates
    all failed is dropped from both, docs/domain.md 'TANGO and Prob-TANGO')."""
    if frame is None or frame.empty:
        return []
    instances = _instances(frame)
    rows = []
    for cell, group in _cells(instances):
        kept = group[group["successful"] > 0]
        gen = _population_std(kept["gen_correct"].to_numpy(float), kept["samples"].to_numpy(float))
        prob = _population_std(kept["prob_correct"].to_numpy(float), kept["successful"].to_numpy(float))
        rows.append(
            {
                **cell,
                "n_gen": int(gen.size),
                "sigma_gen_shares": variation_shares(kept["gen_correct"].to_numpy(), kept["samples"].to_numpy()),
                "sigma_gen_mean": float(gen.mean()) if gen.size else None,
                "sigma_gen_std": float(gen.std()) if gen.size else None,
                "n_prob": int(prob.size),
                "sigma_prob_shares": variation_shares(kept["prob_correct"].to_numpy(), kept["successful"].to_numpy()),
                "sigma_prob_mean": float(prob.mean()) if prob.size else None,
                "sigma_prob_std": float(prob.std()) if prob.size else None,
            }
        )
    return cast(list[TangoVariationRow], rows)


def tango_prob_vs_gen(*, frame: pd.DataFrame | None) -> list[ProbVsGenRow]:
    """Per cell: template 1's m_prob against generation 1's m_gen, over instances whose template 1 succeeded."""
    if frame is None or frame.empty:
        return []
    instances = _instances(frame)
    paired = instances[(instances["first_scored"] == True) & (instances["first_failed"] == False)]  # noqa: E712
    paired = paired.dropna(subset=["prob_first", "gen_first"])
    result = [
        {**cell, **binary_agreement(group["prob_first"].to_numpy(int), group["gen_first"].to_numpy(int))}
        for cell, group in _cells(paired)
    ]
    return cast(list[ProbVsGenRow], result)


def tango_beta_disagreement(*, frame: pd.DataFrame | None) -> list[BetaRow]:
    """Per cell: the beta fit of d_k from the instance means of m_prob (successful templates) and m_gen."""
    if frame is None or frame.empty:
        return []
    instances = _instances(frame)
    scored = instances[instances["successful"] > 0]
    rows = []
    for cell, group in _cells(scored):
        m_prob = (group["prob_correct"] / group["successful"]).to_numpy(float)
        m_gen = (group["gen_correct"] / group["samples"]).to_numpy(float)
        rows.append({**cell, **beta_moments(disagreement_probability(m_prob, m_gen))})
    return cast(list[BetaRow], rows)
