"""Reads for the automatic side of a report: the probability results and generations of the pool's jobs.

The database does the heavy lifting: generations are reduced to one row per job x instance x setting (sample count,
correct count, the first sample's verdict) before they reach Python, and repetition rates are averaged in SQL.
Cells are model (job.model.name) x dataset (the dataset's label: its kind, a templates dataset's name) x setting x pronoun (instance.pronoun): `analysis.cells`.
"""

from __future__ import annotations

from typing import cast

import numpy as np
from django.db.models import Avg, Count, F, Q, StdDev

from analysis.cells import CELL, cell_groups
from analysis.metrics import beta_moments, binary_agreement, disagreement_probability, mean_sem, variation_shares
from analysis.metrics.agreement import bootstrap_ci, bootstrap_ratio_ci, finite
from analysis.models import RepetitionRate
from analysis.report.types import AccuracyRow, BetaRow, ConflictRow, ProbVsGenRow, RepetitionRow, VariationRow
from annotation.models import Pool
from common.frames import pd
from generation.datasets.labels import dataset_label_expression
from generation.models import Generation, Instance, Job, ProbResult

CONFLICT_SCOPES = ["all", "dataset", "model", "pronoun", "setting"]


def pool_job_ids(*, pool: Pool) -> list[int]:
    return list(pool.jobs.values_list("id", flat=True))


def _jobs_frame(job_ids: list[int]) -> pd.DataFrame:
    return pd.DataFrame.from_records(
        Job.objects.filter(id__in=job_ids)
        .annotate(label=dataset_label_expression("generation_run__dataset"))
        .values_list("id", "model__name", "label", "generation_run__prob_score"),
        columns=["job_id", "model", "dataset", "prob_score"],
    )


def instance_frame(*, job_ids: list[int]) -> pd.DataFrame:
    """One row per job x instance x setting with generations: `samples`, `correct` (count of heuristic-correct
    samples), `first` (the sample_index 0 verdict, NaN if that sample is missing) and `m_prob` (NaN without a
    probability result), plus the cell columns.

    Instances with distractor sentences are left out: the first pronoun may be the other person's, so the heuristic
    is no result there; the report's `distractors` table gives their figures per distractor count, the heuristic only
    beside the human verdict (docs/domain.md, 'RUFF with distractors')."""
    columns = ["job_id", "instance_id", "setting", "samples", "correct", "first_present", "first_correct"]
    with_distractors = Q(instance__distractors__gt=0)
    generations = pd.DataFrame.from_records(
        Generation.objects.filter(job_id__in=job_ids)
        .exclude(with_distractors)
        .values("job_id", "instance_id", "setting")
        .annotate(
            samples=Count("id"),
            correct=Count("id", filter=Q(heuristic_correct=True)),
            first_present=Count("id", filter=Q(sample_index=0)),
            first_correct=Count("id", filter=Q(sample_index=0, heuristic_correct=True)),
        )
        # A fixed order for the bootstrap's resampling of instances (not whatever order the grouping returns).
        .order_by("job_id", "instance_id", "setting")
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
        ProbResult.objects.filter(job_id__in=job_ids)
        .exclude(with_distractors)
        .values_list("job_id", "instance_id", "correct"),
        columns=["job_id", "instance_id", "m_prob"],
    )
    pronouns = pd.DataFrame.from_records(
        Instance.objects.filter(dataset__generation_runs__job_id__in=job_ids).distinct().values_list("id", "pronoun"),
        columns=["instance_id", "pronoun"],
    )
    frame = generations.merge(probs, on=["job_id", "instance_id"], how="left").merge(pronouns, on="instance_id")
    frame["m_prob"] = frame["m_prob"].astype(float)
    frame["first"] = np.where(frame["first_present"] > 0, frame["first_correct"], np.nan)
    frame = frame.merge(_jobs_frame(job_ids), on="job_id", how="left")
    return frame


def prob_vs_gen(*, frame: pd.DataFrame) -> list[ProbVsGenRow]:
    """Per cell: m_prob against the first sample's m_gen over instances that have both."""
    paired = frame.dropna(subset=["m_prob", "first"])
    rows = []
    for cell, group in cell_groups(paired, ["m_prob", "first"]):
        rows.append({**cell, **binary_agreement(group["m_prob"].astype(int), group["first"].astype(int))})
    return cast(list[ProbVsGenRow], rows)


def instance_variation(*, frame: pd.DataFrame) -> list[VariationRow]:
    """Per cell: the share of instances at each population std of their samples' verdicts."""
    rows = []
    for cell, group in cell_groups(frame, ["correct", "samples"]):
        shares = variation_shares(group["correct"], group["samples"])
        rows.append({**cell, "n": int(group["samples"].size), "samples": int(group["samples"].max()), "shares": shares})
    return cast(list[VariationRow], rows)


def beta_disagreement(*, frame: pd.DataFrame) -> list[BetaRow]:
    """Per cell: the beta fit of d_k over instances with a probability result."""
    scored = frame.dropna(subset=["m_prob"])
    rows = []
    for cell, group in cell_groups(scored, ["m_prob", "correct", "samples"]):
        d = disagreement_probability(group["m_prob"], group["correct"] / group["samples"])
        rows.append({**cell, **beta_moments(d)})
    return cast(list[BetaRow], rows)


def repetition(*, job_ids: list[int]) -> list[RepetitionRow]:
    """Mean and population std of the cached repetition rates per cell (generations too short for 4-grams are left
    out; `n` counts the rest)."""
    rows = (
        RepetitionRate.objects.filter(job_id__in=job_ids, rate__isnull=False)
        .values(
            "setting",
            "pronoun",
            model=F("job__model__name"),
            dataset=dataset_label_expression("job__generation_run__dataset"),
        )
        .annotate(mean=Avg("rate"), std=StdDev("rate", sample=False), n=Count("pk"))
        .order_by(*CELL)
    )
    result = [
        {**{c: row[c] for c in CELL}, "mean": finite(row["mean"]), "std": finite(row["std"]), "n": row["n"]}
        for row in rows
    ]
    return cast(list[RepetitionRow], result)


def _share_sem(successes: int, n: int) -> float | None:
    """scipy.stats.sem of a 0/1 vector with `successes` ones out of n, from the counts: sqrt(p (1 - p) / (n - 1))."""
    if n < 2:
        return None
    p = successes / n
    return finite(np.sqrt(p * (1 - p) / (n - 1)))


def _figures(name: str, values: np.ndarray) -> dict:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    figures = mean_sem(values)
    return {
        name: figures["mean"],
        f"{name}_sem": figures["sem"],
        f"{name}_boot_ci": bootstrap_ci(values),
        f"{name}_n": int(values.size),
    }


def _tango_successful(tango: pd.DataFrame | None) -> pd.DataFrame:
    """TANGO generations whose Prob-TANGO template succeeded (docs/domain.md, 'TANGO and Prob-TANGO')."""
    if tango is None or tango.empty:
        return pd.DataFrame(columns=[*CELL, "sample_index", "m_prob", "m_gen"])
    ok = tango[tango["scored"] & (tango["failed"] == False)]  # noqa: E712 - an object column of True/False/None
    return ok.dropna(subset=["m_prob"])


def _tango_first_pairs(tango: pd.DataFrame | None) -> pd.DataFrame:
    """TANGO's (m_prob, first m_gen) pairs: template 1's verdict against generation 1's, as TANGO's v^f pairs them;
    instances whose template 1 failed are left out."""
    first = _tango_successful(tango)
    first = first[first["sample_index"] == 0]
    return pd.DataFrame({**{c: first[c] for c in CELL}, "m_prob": first["m_prob"], "first": first["m_gen"]})


def accuracy(*, frame: pd.DataFrame, human_frame: pd.DataFrame, tango: pd.DataFrame | None = None) -> list[AccuracyRow]:
    """Per cell (docs/domain.md, 'Aggregates'): `prob` (mean m_prob over the cell's instances), `gen` (mean m_gen over
    all their samples), `gen_first` (mean m_gen of sample 0), `human` (mean human binary over the pool's annotated study
    items of the cell, None without annotations); each with `<name>_sem` (scipy.stats.sem) and `<name>_n`; `n` is
    the cell's instances. Cells that only one side knows (an imported pool has no jobs) are listed with None.
    For TANGO, whose m_prob is per template, `prob` is the mean over every successful Prob-TANGO template."""
    automatic_rows: dict[tuple, dict] = {}
    columns = ["samples", "correct", "m_prob", "first", *(["prob_score"] if "prob_score" in frame else [])]
    for cell, group in cell_groups(frame, columns):
        samples, correct = int(group["samples"].sum()), int(group["correct"].sum())
        automatic_rows[tuple(cell.values())] = {
            "n": int(group["samples"].size),
            **_figures("prob", group["m_prob"]),
            "gen": correct / samples if samples else None,
            "gen_sem": _share_sem(correct, samples),
            # instances resampled, each with all of its samples (docs/domain.md, 'Multi-rater statistics')
            "gen_boot_ci": bootstrap_ratio_ci(group["correct"], group["samples"]),
            "gen_n": samples,
            **_figures("gen_first", group["first"]),
            # how the probability figures were scored: the jobs' prob_score (docs/domain.md, 'Probability scoring: mean or sum')
            "prob_score": _prob_score(group.get("prob_score")),
        }
    for cell, group in cell_groups(_tango_successful(tango), ["m_prob"]):
        if tuple(cell.values()) in automatic_rows:
            automatic_rows[tuple(cell.values())].update(_figures("prob", group["m_prob"]))
    human_rows: dict[tuple, dict] = {}
    for cell, group in cell_groups(human_frame, ["human_binary"]):
        human_rows[tuple(cell.values())] = _figures("human", group["human_binary"])
    empty_automatic = {"n": 0, "prob": None, "prob_sem": None, "prob_boot_ci": None, "prob_n": 0, "prob_score": None}
    empty_automatic |= {"gen": None, "gen_sem": None, "gen_boot_ci": None, "gen_n": 0}
    empty_automatic |= {"gen_first": None, "gen_first_sem": None, "gen_first_boot_ci": None, "gen_first_n": 0}
    empty_human = {"human": None, "human_sem": None, "human_boot_ci": None, "human_n": 0}
    result = [
        {
            **dict(zip(CELL, key, strict=True)),
            **automatic_rows.get(key, empty_automatic),
            **human_rows.get(key, empty_human),
        }
        for key in sorted(set(automatic_rows) | set(human_rows), key=lambda key: tuple(map(str, key)))
    ]
    return cast(list[AccuracyRow], result)


def _prob_score(scores: np.ndarray | None) -> str | None:
    if scores is None:
        return None
    return ", ".join(sorted({str(score) for score in scores if not pd.isna(score)})) or None


def conflict_rate(*, frame: pd.DataFrame, tango: pd.DataFrame | None = None) -> list[ConflictRow]:
    """The share of instances whose m_prob differs from their first sample's m_gen (docs/domain.md, 'Aggregates'):
    over everything (`scope` "all", `value` "all": the paper's headline, over all three datasets), then per dataset,
    model, pronoun and setting. Weighted by instances: `rate` = sum of conflicts / sum of instances, never a mean of
    cell rates. An instance counts once per job and setting, and only with both a probability result and a first
    sample; for TANGO, template 1's m_prob against generation 1's m_gen (instances whose template 1 failed left out)."""
    columns = [*CELL, "m_prob", "first"]
    parts = [frame.dropna(subset=["m_prob", "first"]), _tango_first_pairs(tango)]
    parts = [part[columns] for part in parts if not part.empty]
    if not parts:
        return []
    rows: list[ConflictRow] = []
    paired = pd.concat(parts, ignore_index=True)
    conflicts = paired["m_prob"].astype(int) != paired["first"].astype(int)
    for scope in CONFLICT_SCOPES:
        keys = pd.Series("all", index=paired.index) if scope == "all" else paired[scope]
        for value, flags in conflicts.groupby(keys, sort=True):
            instances, count = int(flags.size), int(flags.sum())
            rows.append(
                {"scope": scope, "value": value, "conflicts": count, "instances": instances, "rate": count / instances}
            )
    return rows
