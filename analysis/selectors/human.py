"""Reads for the human side of a report: annotations of a pool, by item, in pandas frames.

Only study items count (docs/domain.md, 'The annotation schema'): gold and training items never enter a study
metric. "First annotator" of an item is the author of its earliest annotation (by created_at, then id); the second
annotator is the next one. Overlap items are items with at least two annotations; the two-rater figures compare their
first two, the multi-rater ones (Fleiss' kappa, Krippendorff's alpha over all raters, pairwise kappa) use every
annotation. The human label of an item (docs/domain.md, 'The human label of an item') is its adjudicated label where
there is one, otherwise the majority of its annotations, a tie going to the tied label given first (with two
disagreeing annotators: the first annotator's); the extraneous flag follows the same rule.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.cells import CELL
from analysis.metrics import cohen_kappa, krippendorff_alpha, mean_sem, raw_agreement
from analysis.metrics.agreement import Kappa, finite
from analysis.metrics.multirater import fleiss_kappa, krippendorff_alpha_all, majority, pairwise_agreement
from annotation.models import STUDY, Adjudication, Annotation, Pool, PoolItem
from annotation.schema import human_binary

ITEM_FIELDS = [
    "id",
    "public_id",
    "model_name",
    "dataset",
    "setting",
    "pronoun",
    "sample_index",
    "context",
    "continuation",
    "heuristic_correct",
    "first_pronoun",
]


def pool_item_frame(*, pool: Pool) -> pd.DataFrame:
    """One row per annotated study item: its cell, the heuristic, first and second annotations, every annotation
    (`annotators`, `labels`, `extraneous_flags`: lists in annotation order) and the human verdict."""
    items = pd.DataFrame.from_records(
        PoolItem.objects.filter(pool=pool, kind=STUDY).values_list(*ITEM_FIELDS), columns=ITEM_FIELDS
    ).rename(columns={"model_name": "model"})
    annotations = pd.DataFrame.from_records(
        Annotation.objects.filter(item__pool=pool, item__kind=STUDY)
        .order_by("item_id", "created_at", "id")
        .values_list("item_id", "annotator__username", "label", "extraneous"),
        columns=["id", "annotator", "label", "extraneous"],
    )
    if annotations.empty or items.empty:
        return _empty_frame()
    annotations["rank"] = annotations.groupby("id").cumcount()
    first = annotations[annotations["rank"] == 0].drop(columns="rank").set_index("id").add_suffix("_1")
    second = annotations[annotations["rank"] == 1].drop(columns="rank").set_index("id").add_suffix("_2")
    every = annotations.groupby("id").agg(
        annotators=("annotator", list), labels=("label", list), extraneous_flags=("extraneous", list)
    )
    every["n_annotations"] = every["labels"].map(len)
    frame = items.set_index("id").join(first, how="inner").join(second, how="left").join(every, how="left")
    adjudications = pd.DataFrame.from_records(
        Adjudication.objects.filter(item__pool=pool, item__kind=STUDY).values_list("item_id", "label", "extraneous"),
        columns=["id", "adjudicated_label", "adjudicated_extraneous"],
    ).set_index("id")
    frame = frame.join(adjudications, how="left")
    # An adjudication may settle only the extraneous words: a blank label leaves the annotators' label standing.
    adjudicated = frame["adjudicated_label"].notna() & (frame["adjudicated_label"] != "")
    frame["human_label"] = frame["adjudicated_label"].where(adjudicated, frame["labels"].map(majority))
    frame["human_extraneous"] = (
        frame["adjudicated_extraneous"]
        .where(frame["adjudicated_extraneous"].notna(), frame["extraneous_flags"].map(majority))
        .astype(bool)
    )
    frame["human_binary"] = frame["human_label"].map(human_binary).astype(int)
    frame["heuristic"] = frame["heuristic_correct"].astype(int)
    return frame.reset_index()


def _empty_frame() -> pd.DataFrame:
    columns = [*CELL, "id", "public_id", "sample_index", "context", "continuation", "heuristic_correct"]
    columns += ["first_pronoun", "annotator_1", "label_1", "extraneous_1", "annotator_2", "label_2", "extraneous_2"]
    columns += ["annotators", "labels", "extraneous_flags", "n_annotations"]
    columns += ["human_label", "human_extraneous", "human_binary", "heuristic"]
    return pd.DataFrame(columns=columns)


def _binary(labels: pd.Series) -> np.ndarray:
    return labels.map(human_binary).astype(int).to_numpy()


def _agreement_block(a: np.ndarray, b: np.ndarray, *, categories: list) -> dict:
    raw = raw_agreement(a, b)
    return {
        "n_items": raw["n"],
        "raw_agreement": raw["agreement"],
        "raw_agreement_sem": raw["sem"],
        **_kappa_keys(cohen_kappa(a, b, categories=categories)),
        "krippendorff_alpha": krippendorff_alpha(a, b),
    }


def _multirater_block(annotators: list[list[str]], ratings: list[list], *, categories: list) -> dict:
    """The k-rater figures of one view: `n_raters` (the most annotations any item has), Fleiss' kappa over the
    items with that many, Krippendorff's alpha over every annotation, and Cohen's kappa per annotator pair."""
    n_raters = max((len(r) for r in ratings), default=0)
    return {
        "n_raters": n_raters,
        **fleiss_kappa(ratings, n_raters=n_raters, categories=categories),
        "krippendorff_alpha_all": krippendorff_alpha_all(ratings),
        "pairwise": pairwise_agreement(
            [list(zip(names, values, strict=True)) for names, values in zip(annotators, ratings, strict=True)],
            categories=categories,
        ),
    }


def _kappa_keys(kappa: Kappa) -> dict:
    return {"cohen_kappa": kappa["kappa"], "kappa_ci": kappa["kappa_ci"]}


def inter_annotator(*, frame: pd.DataFrame, labels: list[str]) -> dict:
    """Agreement of the first two annotations on the overlap items, for the 3-way label, the binary label and the
    extraneous flag, plus the label confusion table (rows: first annotator, columns: second) and the annotator pairs."""
    overlap = frame[frame["label_2"].notna()] if not frame.empty else frame
    first, second = overlap["label_1"].astype(str), overlap["label_2"].astype(str)
    seen = {str(label) for row in overlap["labels"] for label in row} if not overlap.empty else set()
    categories = list(labels) + sorted((set(first) | set(second) | seen) - set(labels))
    confusion = pd.crosstab(
        pd.Categorical(first, categories=categories), pd.Categorical(second, categories=categories), dropna=False
    )
    pairs = (
        overlap.groupby(["annotator_1", "annotator_2"]).size().reset_index(name="n_items")
        if not overlap.empty
        else pd.DataFrame(columns=["annotator_1", "annotator_2", "n_items"])
    )
    pairs["agreement"] = (
        overlap.assign(agree=(first == second).astype(float))
        .groupby(["annotator_1", "annotator_2"])["agree"]
        .mean()
        .values
        if not overlap.empty
        else []
    )
    annotators = overlap["annotators"].tolist()
    labels_all = [[str(label) for label in row] for row in overlap["labels"]]
    binary_all = [[human_binary(label) for label in row] for row in labels_all]
    flags_all = [[int(flag) for flag in row] for row in overlap["extraneous_flags"]]
    return {
        "pronoun_label": {
            **_agreement_block(first.to_numpy(), second.to_numpy(), categories=categories),
            **_multirater_block(annotators, labels_all, categories=categories),
        },
        "pronoun_binary": {
            **_agreement_block(_binary(first), _binary(second), categories=[0, 1]),
            **_multirater_block(annotators, binary_all, categories=[0, 1]),
        },
        "extraneous": {
            **_agreement_block(
                overlap["extraneous_1"].astype(int).to_numpy(),
                overlap["extraneous_2"].astype(int).to_numpy(),
                categories=[0, 1],
            ),
            **_multirater_block(annotators, flags_all, categories=[0, 1]),
        },
        "confusion": {
            "labels": categories,
            "matrix": confusion.reindex(index=categories, columns=categories, fill_value=0).to_numpy().tolist(),
        },
        "annotator_pairs": [
            {
                "annotator_1": row.annotator_1,
                "annotator_2": row.annotator_2,
                "n_items": int(row.n_items),
                "agreement": finite(row.agreement),
            }
            for row in pairs.itertuples()
        ],
    }


def _cell_rows(frame: pd.DataFrame, column: str, name: str) -> list[dict]:
    """Mean and SEM of a 0/1 column per cell (SEM by scipy.stats.sem; None for a single item)."""
    if frame.empty:
        return []
    grouped = frame.groupby(CELL, sort=True)[column]
    rows = []
    for cell, values in grouped:
        figures = mean_sem(values.to_numpy(dtype=float))
        rows.append(
            {**dict(zip(CELL, cell, strict=True)), name: figures["mean"], "sem": figures["sem"], "n": int(values.size)}
        )
    return rows


def human_vs_heuristic(*, frame: pd.DataFrame) -> list[dict]:
    """Raw agreement of the human binary verdict with the heuristic per cell."""
    if frame.empty:
        return []
    agree = frame.assign(agree=(frame["human_binary"] == frame["heuristic"]).astype(float))
    return _cell_rows(agree, "agree", "agreement")


def extraneous_rate(*, frame: pd.DataFrame) -> list[dict]:
    if frame.empty:
        return []
    return _cell_rows(frame.assign(flag=frame["human_extraneous"].astype(float)), "flag", "rate")


def label_distribution(*, frame: pd.DataFrame, labels: list[str]) -> list[dict]:
    """Human label counts per cell, one column per label (the pool's labels first, then any others seen)."""
    if frame.empty:
        return []
    counts = frame.groupby([*CELL, "human_label"]).size().unstack("human_label", fill_value=0)
    columns = list(labels) + sorted(set(counts.columns) - set(labels))
    counts = counts.reindex(columns=columns, fill_value=0)
    rows = []
    for cell, values in counts.iterrows():
        rows.append(
            {**dict(zip(CELL, cell, strict=True)), "n": int(values.sum()), **{k: int(v) for k, v in values.items()}}
        )
    return rows


def disagreements(*, frame: pd.DataFrame) -> list[dict]:
    """Items where the human binary verdict and the heuristic differ, for researchers to read."""
    if frame.empty:
        return []
    rows = frame[frame["human_binary"] != frame["heuristic"]].sort_values([*CELL, "id"])
    return [
        {
            "public_id": row.public_id,
            "model": row.model,
            "dataset": row.dataset,
            "setting": row.setting,
            "pronoun": row.pronoun,
            "sample_index": None if pd.isna(row.sample_index) else int(row.sample_index),
            "human_label": row.human_label,
            "heuristic_correct": bool(row.heuristic_correct),
            "first_pronoun": row.first_pronoun,
            "context": row.context,
            "continuation": row.continuation,
        }
        for row in rows.itertuples()
    ]
