"""The report's `distractors` section (docs/domain.md, 'RUFF with distractors'): per model x setting x distractor
count, human, probability and heuristic accuracy and human-vs-heuristic agreement (each with its SEM), n, and the
share of first pronouns whose referent is the other person. RUFF's curve of accuracy against distractors, with
human labels. The heuristic's figures are shown beside the human ones only: with a second person in the context the
first pronoun may be theirs, so they are marked "not valid with distractors"."""

from __future__ import annotations

import math
from typing import cast

from analysis.report.types import DistractorRow
from annotation.models import Annotation, PoolItem, Referent
from common.frames import pd
from generation.models import ProbResult

NOT_VALID = "not valid with distractors"


def _mean_sem(values: pd.Series) -> tuple[float | None, float | None]:
    values = values.dropna().astype(float)
    if values.empty:
        return None, None
    from scipy import stats  # where it is used: see analysis/metrics/agreement.py

    sem = float(stats.sem(values)) if len(values) > 1 else None
    return float(values.mean()), (None if sem is None or math.isnan(sem) else sem)


def _distractor_items(item_ids: list[int]) -> pd.DataFrame:
    """Per study item over a distractor instance: its count, its probability verdict and whether its first pronoun
    refers to the other person (in the item's first annotation; None when the text has no pronoun)."""
    rows = list(
        PoolItem.objects.filter(pk__in=item_ids, generation__instance__distractors__isnull=False).values_list(
            "pk", "generation__instance__distractors", "generation__job_id", "generation__instance_id"
        )
    )
    frame = pd.DataFrame(rows, columns=["id", "distractors", "job", "instance"])
    if frame.empty:
        return frame
    prob = dict(
        ((job, instance), correct)
        for job, instance, correct in ProbResult.objects.filter(
            job_id__in=set(frame["job"]), instance_id__in=set(frame["instance"])
        ).values_list("job_id", "instance_id", "correct")
    )
    frame["prob_correct"] = [prob.get((j, i)) for j, i in zip(frame["job"], frame["instance"], strict=True)]
    first_annotation: dict[int, int] = {}
    for item_id, annotation_id in (
        Annotation.objects.filter(item_id__in=list(frame["id"]))
        .order_by("created_at", "pk")
        .values_list("item_id", "pk")
    ):
        first_annotation.setdefault(item_id, annotation_id)
    first_referent: dict[int, str] = {}
    for annotation_id, referent in (
        Referent.objects.filter(annotation_id__in=first_annotation.values())
        .order_by("start")
        .values_list("annotation_id", "referent")
    ):
        first_referent.setdefault(annotation_id, referent)
    frame["first_other"] = [
        None if first_annotation.get(i) not in first_referent else float(first_referent[first_annotation[i]] == "other")
        for i in frame["id"]
    ]
    return frame


def distractors(*, frame: pd.DataFrame) -> list[DistractorRow]:
    """One row per model x setting x distractor count among the pool's annotated study items over a distractor set
    (`frame` is the report's human frame: one row per item with its human verdict)."""
    if frame.empty:
        return []
    items = _distractor_items([int(i) for i in frame["id"]])
    if items.empty:
        return []
    joined = frame[["id", "model", "setting", "human_binary", "heuristic"]].merge(items, on="id")
    joined["agree"] = (joined["human_binary"].astype(int) == joined["heuristic"].astype(int)).astype(float)
    rows = []
    for (model, setting, count), cell in joined.groupby(["model", "setting", "distractors"], sort=True):
        row: dict = {"model": model, "setting": setting, "distractors": int(count), "n": len(cell)}
        for name, column in (
            ("human_accuracy", "human_binary"),
            ("probability_accuracy", "prob_correct"),
            ("heuristic_accuracy", "heuristic"),
            ("human_vs_heuristic", "agree"),
        ):
            row[name], row[f"{name}_sem"] = _mean_sem(pd.to_numeric(cell[column], errors="coerce"))
        row["heuristic_validity"] = NOT_VALID
        first = cell["first_other"].dropna()
        row["first_pronoun_other_share"] = float(first.mean()) if len(first) else None
        row["first_pronoun_n"] = len(first)
        rows.append(row)
    return cast(list[DistractorRow], rows)
