"""Reads for the automatic side of a report: the probability results and generations of the pool's jobs.

The database does the heavy lifting: generations are reduced to one row per job x instance x setting (sample count,
correct count, the first sample's verdict) before they reach Python, and repetition rates are averaged in SQL.
Cells are model (job.model.name) x dataset (job.dataset.kind) x setting x pronoun (instance.pronoun).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from django.db.models import Avg, Count, F, Q, StdDev

from analysis.metrics import beta_moments, binary_agreement, disagreement_probability, variation_shares
from analysis.metrics.agreement import finite
from analysis.models import RepetitionRate
from annotation.models import Pool
from generation.models import Generation, GenerationJob, Instance, ProbResult

CELL = ["model", "dataset", "setting", "pronoun"]


def pool_job_ids(*, pool: Pool) -> list[int]:
    return list(pool.jobs.values_list("id", flat=True))


def _jobs_frame(job_ids: list[int]) -> pd.DataFrame:
    return pd.DataFrame.from_records(
        GenerationJob.objects.filter(id__in=job_ids).values_list("id", "model__name", "dataset__kind"),
        columns=["job_id", "model", "dataset"],
    )


def instance_frame(*, job_ids: list[int]) -> pd.DataFrame:
    """One row per job x instance x setting with generations: `samples`, `correct` (count of heuristic-correct
    samples), `first` (the sample_index 0 verdict, NaN if that sample is missing) and `m_prob` (NaN without a
    probability result), plus the cell columns."""
    columns = ["job_id", "instance_id", "setting", "samples", "correct", "first_present", "first_correct"]
    generations = pd.DataFrame.from_records(
        Generation.objects.filter(job_id__in=job_ids)
        .values("job_id", "instance_id", "setting")
        .annotate(
            samples=Count("id"),
            correct=Count("id", filter=Q(heuristic_correct=True)),
            first_present=Count("id", filter=Q(sample_index=0)),
            first_correct=Count("id", filter=Q(sample_index=0, heuristic_correct=True)),
        )
        .order_by()
        .values_list(
            "job_id",
            "instance_id",
            "setting",
            "samples",
            "correct",
            "first_present",
            "first_correct",
        ),
        columns=columns,
    )
    probs = pd.DataFrame.from_records(
        ProbResult.objects.filter(job_id__in=job_ids).values_list("job_id", "instance_id", "correct"),
        columns=["job_id", "instance_id", "m_prob"],
    )
    pronouns = pd.DataFrame.from_records(
        Instance.objects.filter(dataset__jobs__id__in=job_ids).distinct().values_list("id", "pronoun"),
        columns=["instance_id", "pronoun"],
    )
    frame = generations.merge(probs, on=["job_id", "instance_id"], how="left").merge(pronouns, on="instance_id")
    frame["m_prob"] = frame["m_prob"].astype(float)
    frame["first"] = np.where(frame["first_present"] > 0, frame["first_correct"], np.nan)
    frame = frame.merge(_jobs_frame(job_ids), on="job_id", how="left")
    return frame


def _cells(frame: pd.DataFrame):
    for cell, group in frame.groupby(CELL, sort=True):
        yield dict(zip(CELL, cell, strict=True)), group


def prob_vs_gen(*, frame: pd.DataFrame) -> list[dict]:
    """Per cell: m_prob against the first sample's m_gen over instances that have both."""
    paired = frame.dropna(subset=["m_prob", "first"])
    rows = []
    for cell, group in _cells(paired):
        rows.append({**cell, **binary_agreement(group["m_prob"].to_numpy(int), group["first"].to_numpy(int))})
    return rows


def instance_variation(*, frame: pd.DataFrame) -> list[dict]:
    """Per cell: the share of instances at each population std of their samples' verdicts."""
    rows = []
    for cell, group in _cells(frame):
        shares = variation_shares(group["correct"].to_numpy(), group["samples"].to_numpy())
        rows.append({**cell, "n": int(len(group)), "samples": int(group["samples"].max()), "shares": shares})
    return rows


def beta_disagreement(*, frame: pd.DataFrame) -> list[dict]:
    """Per cell: the beta fit of d_k over instances with a probability result."""
    scored = frame.dropna(subset=["m_prob"])
    rows = []
    for cell, group in _cells(scored):
        d = disagreement_probability(group["m_prob"].to_numpy(), (group["correct"] / group["samples"]).to_numpy())
        rows.append({**cell, **beta_moments(d)})
    return rows


def repetition(*, job_ids: list[int]) -> list[dict]:
    """Mean and population std of the cached repetition rates per cell (generations too short for 4-grams are left
    out; `n` counts the rest)."""
    rows = (
        RepetitionRate.objects.filter(job_id__in=job_ids, rate__isnull=False)
        .values("setting", "pronoun", model=F("job__model__name"), dataset=F("job__dataset__kind"))
        .annotate(mean=Avg("rate"), std=StdDev("rate", sample=False), n=Count("pk"))
        .order_by(*CELL)
    )
    return [
        {**{c: row[c] for c in CELL}, "mean": finite(row["mean"]), "std": finite(row["std"]), "n": row["n"]}
        for row in rows
    ]
