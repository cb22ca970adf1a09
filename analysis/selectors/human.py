"""Reads for the human side of a report: annotations of a pool, by item, in pandas frames.

Only study items count (docs/domain.md, 'The annotation schema'): gold and training items never enter a study
metric. "First annotator" of an item is the author of its earliest annotation (by created_at, then id); the second
annotator is the next one. Overlap items are items with at least two annotations; the headline figures count every
pair of an item's annotations (docs/domain.md, 'Headline figures'), the multi-rater ones (Fleiss' kappa, Gwet's AC1,
Krippendorff's alpha over all raters, pairwise kappa) use every annotation (docs/domain.md, 'Multi-rater
statistics'); the confusion table and the annotator pairs compare the first two. The human label of an item (docs/domain.md, 'The human
label of an item') is its adjudicated label where there is one, otherwise the majority of its annotations, a tie going
to the tied label given first (with two disagreeing annotators: the first annotator's); the extraneous flag follows
the same rule. A report may take another verdict instead (`frame_with_human_verdict`).
"""

from __future__ import annotations

import itertools
from typing import cast

import numpy as np

from analysis.cells import CELL, cell_groups
from analysis.metrics import mean_sem
from analysis.metrics.agreement import (
    KappaSquare,
    agreement_vector,
    bootstrap_ci,
    bootstrap_ratio_ci,
    cohen_kappa_square,
    finite,
)
from analysis.metrics.multirater import (
    SCALE_KEYS,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha_all,
    light_kappa,
    majority,
    pairwise_agreement,
    pooled_pairs,
)
from analysis.metrics.scales import errors, label_numbers, weighted_kappas
from analysis.report.parts import LABEL_RESERVED
from analysis.report.types import (
    AnnotatorPair,
    Disagreement,
    GuidelineVersionRow,
    HumanVsHeuristicRow,
    InterAnnotator,
    LabelDistributionRow,
    RateRow,
)
from annotation.labelset import label_keys, positive_label
from annotation.models import NOMINAL, STUDY, Adjudication, Annotation, Pool, PoolItem
from annotation.schema import MISGENDERING, human_binary
from annotation.selectors.aggregate import AGGREGATES, AggregationError
from common.frames import pd

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
    # Pool order (the order the items were stored in, docs/domain.md, 'The annotation pool'): the examples draw and
    # the bootstrap resampling read the items in it, so they must not depend on how the database returns rows.
    items = pd.DataFrame.from_records(
        PoolItem.objects.filter(pool=pool, kind=STUDY).order_by("pk").values_list(*ITEM_FIELDS), columns=ITEM_FIELDS
    ).rename(columns={"model_name": "model"})
    annotations = pd.DataFrame.from_records(
        Annotation.objects.filter(item__pool=pool, item__kind=STUDY)
        # Annotations made at one time (one import's) are taken by annotator, not in the file's order.
        .order_by("item_id", "created_at", "id")
        .values_list("item_id", "annotator__username", "label", "extraneous"),
        columns=["id", "annotator", "label", "extraneous"],
    )
    if annotations.empty or items.empty:
        return _empty_frame()
    first, second, every = _by_item(annotations)
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
    positive = positive_label(pool) or MISGENDERING
    frame["human_binary"] = frame["human_label"].map(lambda label: human_binary(label, positive)).astype(int)
    # Null where the heuristic has no verdict (free text with no stated pronoun: docs/domain.md, "Bring your own
    # study"); such items leave every comparison with the heuristic.
    frame["heuristic"] = frame["heuristic_correct"].map({True: 1, False: 0})
    return frame.reset_index()


def _by_item(annotations: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """From the annotations in item order, then time: each item's first annotation, its second (none for an item
    with one) and all of them as lists in order (`annotators`, `labels`, `extraneous_flags`, `n_annotations`), each
    indexed by item id. Found in one pass over the ids: pandas' grouping costs milliseconds on a pool's few rows, and
    every report build reads this frame."""
    ids = annotations["id"].tolist()
    starts = [position for position, item_id in enumerate(ids) if position == 0 or item_id != ids[position - 1]]
    ends = [*starts[1:], len(ids)]
    seconds = [start + 1 for start, end in zip(starts, ends, strict=True) if end - start > 1]

    def lists(column: str) -> list[list]:
        values = annotations[column].tolist()
        return [values[start:end] for start, end in zip(starts, ends, strict=True)]

    every = pd.DataFrame(
        {"annotators": lists("annotator"), "labels": lists("label"), "extraneous_flags": lists("extraneous")},
        index=pd.Index([ids[start] for start in starts], dtype=annotations["id"].dtype, name="id"),
    )
    every["n_annotations"] = [end - start for start, end in zip(starts, ends, strict=True)]
    first = annotations.iloc[starts].set_index("id").add_suffix("_1")
    second = annotations.iloc[seconds].set_index("id").add_suffix("_2")
    return first, second, every


# The human verdicts a report can compare with the heuristic (`report --human`); without one, the default rule of
# docs/domain.md, 'The human label of an item' (adjudicated, else the majority with ties to the first given).
HUMAN_VERDICTS = (*AGGREGATES, "first")


def frame_with_human_verdict(
    *, frame: pd.DataFrame, human: str | None, aggregates: list[dict], positive: str = MISGENDERING
) -> pd.DataFrame:
    """The frame with `human_label` and `human_binary` taken from another verdict: "first" (the first annotation),
    or one of the aggregates (docs/domain.md, 'Multi-rater statistics') from `aggregates`, the rows of
    `annotation.selectors.aggregate.pool_aggregates`. None leaves the frame as it is. Raises ValueError for an
    unknown verdict and AggregationError for an aggregate of a pool that has none (no item rated twice)."""
    if human is None:
        return frame
    if human not in HUMAN_VERDICTS:
        raise ValueError(f"unknown human verdict {human!r}; choose one of {', '.join(HUMAN_VERDICTS)}")
    frame = frame.copy()
    if human == "first":
        frame["human_label"] = frame["label_1"]
    else:
        if not aggregates:
            raise AggregationError("no item has two or more ratings, so there is nothing to aggregate")
        by_item = {row["item"]: row[human] for row in aggregates}
        frame["human_label"] = frame["public_id"].map(by_item)
    if not frame.empty:
        frame["human_binary"] = frame["human_label"].map(lambda label: human_binary(label, positive)).astype(int)
    return frame


def _empty_frame() -> pd.DataFrame:
    columns = [*CELL, "id", "public_id", "sample_index", "context", "continuation", "heuristic_correct"]
    columns += ["first_pronoun", "annotator_1", "label_1", "extraneous_1", "annotator_2", "label_2", "extraneous_2"]
    columns += ["annotators", "labels", "extraneous_flags", "n_annotations"]
    columns += ["human_label", "human_extraneous", "human_binary", "heuristic"]
    return pd.DataFrame(columns=columns)


def _binary(labels: pd.Series, positive: str = MISGENDERING) -> np.ndarray:
    return labels.map(lambda label: human_binary(label, positive)).astype(int).to_numpy()


def _agreement_block(
    annotators: list[list[str]], ratings: list[list], *, categories: list, scale: str = NOMINAL
) -> dict:
    """The headline figures of one view over the overlap items (docs/domain.md, 'Headline figures'): raw agreement
    over every pair of an item's annotations, pooled over items (SEM over the pairs, bootstrap over the items); where
    every item has exactly two annotations, Cohen's kappa on the square table over the label set with each item's
    two ordered by annotator (two fixed annotators: Cohen's kappa between them), else Light's kappa (the mean
    pairwise kappa over annotator pairs sharing at least MIN_SHARED items, `kappa_method` says which); Krippendorff's
    alpha over all raters at the scale's level; on an ordinal or interval scale weighted kappa (linear, quadratic)
    and MAE and RMSE the same way (None on a nominal one)."""
    numbers = label_numbers(categories, scale) if scale != NOMINAL else None
    agree, pairs = pooled_pairs(ratings)
    n_pairs = int(pairs.sum())
    # One 0/1 value per pair (the SEM's units): the order does not matter to it.
    pair_values = np.r_[np.ones(int(agree.sum())), np.zeros(n_pairs - int(agree.sum()))]
    two_each = bool(ratings) and all(len(r) == 2 for r in ratings)
    block: dict = {
        "n_items": len(ratings),
        "n_pairs": n_pairs,
        "raw_agreement": finite(agree.sum() / n_pairs) if n_pairs else None,
        "raw_agreement_sem": mean_sem(pair_values)["sem"],
        "raw_agreement_boot_ci": bootstrap_ratio_ci(agree, pairs) if not two_each else None,
        "kappa_method": "cohen" if two_each or not ratings else "light",
        "cohen_kappa": None,
        "kappa_ci": None,
        **{key: None for key in SCALE_KEYS},
        "krippendorff_alpha": krippendorff_alpha_all(ratings, numbers=numbers, level=scale),
    }
    if two_each:
        ordered = [sorted(zip(names, values, strict=True), key=lambda pair: str(pair[0])) for names, values in
                   zip(annotators, ratings, strict=True)]  # fmt: skip
        a = np.array([row[0][1] for row in ordered], dtype=object)
        b = np.array([row[1][1] for row in ordered], dtype=object)
        block["raw_agreement_boot_ci"] = bootstrap_ci(agreement_vector(a, b))
        block.update(_kappa_keys(cohen_kappa_square(a, b, categories=categories)))
        if numbers is not None:
            block.update(weighted_kappas(list(a), list(b), labels=categories, scale=scale))
    if numbers is not None:
        left, right = [], []
        for values in ratings:
            for x, y in itertools.combinations(values, 2):
                left.append(numbers[x])
                right.append(numbers[y])
        block.update(errors(left, right))
    return block


PAIRWISE_MAX_RATERS = 50  # 1,225 pairs


def _light(block: dict, annotators: list[list[str]], ratings: list[list], *, categories: list, scale: str) -> None:
    """Light's kappa (and weighted kappas) of a block of items with more than two annotations: the means over every
    annotator pair sharing at least MIN_SHARED items, however many raters the pool has (`light_pairs` of them; None
    when no pair does). The pairs' own rows (`pairwise`) are listed for at most PAIRWISE_MAX_RATERS raters;
    `pairwise_note` says so where there are more."""
    raters = len({name for names in annotators for name in names})
    block["pairwise_note"] = (
        f"no pairs listed: the pool has {raters} raters ({raters * (raters - 1) // 2:,} pairs), more than the "
        f"{PAIRWISE_MAX_RATERS} whose pairs are listed; the headline figures count every pair, and the quality page's "
        "heat map gives each pair's kappa"
        if raters > PAIRWISE_MAX_RATERS
        else None
    )
    block["light_pairs"] = None
    if block["kappa_method"] != "light":
        return
    light = light_kappa(
        [list(zip(names, values, strict=True)) for names, values in zip(annotators, ratings, strict=True)],
        categories=categories,
        scale=scale,
        min_shared=MIN_SHARED,
    )
    block.update(light)


# Light's kappa averages the pairs of annotators who share at least this many items (docs/domain.md, 'Headline
# figures'), as the human ceiling of the judge's verdict does.
MIN_SHARED = 30


def _multirater_block(
    annotators: list[list[str]], ratings: list[list], *, categories: list, scale: str = NOMINAL
) -> dict:
    """The k-rater figures of one view over every annotation of the overlap items: `n_raters` (the most annotations
    any item has), Fleiss' kappa and Gwet's AC1 with each item's own number of raters, Krippendorff's alpha (at the
    scale's level), and Cohen's kappa per annotator pair (with weighted kappa, MAE and RMSE on an ordinal or interval
    scale)."""
    n_raters = max((len(r) for r in ratings), default=0)
    # Each pair costs its bootstrap and asymptotic intervals (tens of milliseconds): a crowd study's 600 raters are
    # 179,700 pairs, hours of them. The pairs are listed for pools of at most PAIRWISE_MAX_RATERS raters
    # (docs/domain.md, 'Multi-rater statistics'); every pair's kappa stays on the quality page's heat map.
    listed = len({name for names in annotators for name in names}) <= PAIRWISE_MAX_RATERS
    numbers = label_numbers(categories, scale) if scale != NOMINAL else None
    return {
        "n_raters": n_raters,
        **fleiss_kappa(ratings, categories=categories),
        **gwet_ac1(ratings, categories=categories),
        "krippendorff_alpha_all": krippendorff_alpha_all(ratings, numbers=numbers, level=scale),
        "pairwise": pairwise_agreement(
            [list(zip(names, values, strict=True)) for names, values in zip(annotators, ratings, strict=True)],
            categories=categories,
            scale=scale,
            numbers=numbers,
        )
        if listed
        else [],
    }


def _kappa_keys(kappa: KappaSquare) -> dict:
    return {"cohen_kappa": kappa["kappa_square"], "kappa_ci": kappa["kappa_square_ci"]}


def _confusion(first: list[str], second: list[str], categories: list[str]) -> list[list[int]]:
    """Counts of (first, second) label pairs: rows the first annotator's label, columns the second's."""
    position = {label: index for index, label in enumerate(categories)}
    matrix = [[0] * len(categories) for _ in categories]
    for a, b in zip(first, second, strict=True):
        matrix[position[a]][position[b]] += 1
    return matrix


def _pairs(pairs: list[tuple[str, str]], agree: list[bool]) -> list[AnnotatorPair]:
    """Per (first, second) annotator pair, in name order: its overlap items and the share on which they agree."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for pair, same in zip(pairs, agree, strict=True):
        n_items, n_agree = counts.get(pair, (0, 0))
        counts[pair] = (n_items + 1, n_agree + int(same))
    return [
        {"annotator_1": a, "annotator_2": b, "n_items": n_items, "agreement": n_agree / n_items}
        for (a, b), (n_items, n_agree) in sorted(counts.items())
    ]


def inter_annotator(
    *, frame: pd.DataFrame, labels: list[str], positive: str = MISGENDERING, scale: str = NOMINAL
) -> InterAnnotator:
    """Agreement on the overlap items for the label (at the pool's scale), the binary label and the extraneous flag
    (the headline figures over every pair of annotations, then the k-rater figures), plus the label confusion table
    of the first two annotations (rows: first annotator, columns: second) and the annotator pairs."""
    overlap = frame[frame["label_2"].notna()] if not frame.empty else frame
    first, second = overlap["label_1"].astype(str), overlap["label_2"].astype(str)
    seen = {str(label) for row in overlap["labels"] for label in row} if not overlap.empty else set()
    categories = list(labels) + sorted((set(first) | set(second) | seen) - set(labels))
    annotator_pairs = list(zip(overlap["annotator_1"].tolist(), overlap["annotator_2"].tolist(), strict=True))
    agree = (first == second).tolist()
    annotators = overlap["annotators"].tolist()
    labels_all = [[str(label) for label in row] for row in overlap["labels"]]
    binary_all = [[human_binary(label, positive) for label in row] for row in labels_all]
    flags_all = [[int(flag) for flag in row] for row in overlap["extraneous_flags"]]
    views = {}
    for view, ratings, view_categories, view_scale in (
        ("pronoun_label", labels_all, categories, scale),
        ("pronoun_binary", binary_all, [0, 1], NOMINAL),
        ("extraneous", flags_all, [0, 1], NOMINAL),
    ):
        block = {
            **_agreement_block(annotators, ratings, categories=view_categories, scale=view_scale),
            **_multirater_block(annotators, ratings, categories=view_categories, scale=view_scale),
        }
        _light(block, annotators, ratings, categories=view_categories, scale=view_scale)
        views[view] = block
    result = {
        **views,
        "confusion": {"labels": categories, "matrix": _confusion(first.tolist(), second.tolist(), categories)},
        "annotator_pairs": _pairs(annotator_pairs, agree),
    }
    return cast(InterAnnotator, result)


def _cell_rows(frame: pd.DataFrame, column: str, name: str) -> list[dict]:
    """Mean, SEM (scipy.stats.sem's; None for a single item) and bootstrap interval (`<name>_boot_ci`) of a 0/1
    column per cell."""
    rows = []
    for cell, group in cell_groups(frame, [column]):
        values = group[column].astype(float)
        figures = mean_sem(values)
        rows.append(
            {
                **cell,
                name: figures["mean"],
                "sem": figures["sem"],
                f"{name}_boot_ci": bootstrap_ci(values),
                "n": values.size,
            }
        )
    return rows


def consensus(labels: list) -> str | None:
    """'unanimous' for an item whose two or more pronoun labels are all equal, 'split' when they differ, None for an
    item with one label (docs/domain.md, 'Multi-rater statistics')."""
    if len(labels) < 2:
        return None
    return "unanimous" if len(set(labels)) == 1 else "split"


def human_vs_heuristic(*, frame: pd.DataFrame) -> list[HumanVsHeuristicRow]:
    """Raw agreement of the human binary verdict with the heuristic per cell, and the same on the unanimous and on
    the split items (`agreement_unanimous`, `agreement_unanimous_n`, `agreement_split`, `agreement_split_n`): the
    heuristic's errors gather where people disagree."""
    frame = frame[frame["heuristic"].notna()] if not frame.empty else frame
    if frame.empty:
        return []
    agree = frame.assign(
        agree=(frame["human_binary"] == frame["heuristic"]).astype(float),
        consensus=frame["labels"].map(consensus),
    )
    rows = _cell_rows(agree, "agree", "agreement")
    for row, (_, group) in zip(rows, cell_groups(agree, ["agree", "consensus"]), strict=True):
        for kind in ("unanimous", "split"):
            values = group["agree"][group["consensus"] == kind]
            row[f"agreement_{kind}"] = finite(values.mean()) if len(values) else None
            row[f"agreement_{kind}_n"] = int(len(values))
    return cast(list[HumanVsHeuristicRow], rows)


def extraneous_rate(*, frame: pd.DataFrame) -> list[RateRow]:
    if frame.empty:
        return []
    return cast(list[RateRow], _cell_rows(frame.assign(flag=frame["human_extraneous"].astype(float)), "flag", "rate"))


def label_distribution(*, frame: pd.DataFrame, labels: list[str]) -> list[LabelDistributionRow]:
    """Human label counts per cell, one column per label (the pool's labels first, then any others seen), named by
    its key (`annotation.labelset.label_keys`)."""
    if frame.empty:
        return []
    counts = frame.groupby([*CELL, "human_label"]).size().unstack("human_label", fill_value=0)
    columns = list(labels) + sorted(set(counts.columns) - set(labels))
    counts = counts.reindex(columns=columns, fill_value=0)
    keys = label_keys(columns, reserved=LABEL_RESERVED)  # the columns' names; their titles are the labels as written
    rows = []
    for cell, values in counts.iterrows():
        rows.append(
            {**dict(zip(CELL, cell, strict=True)), "n": int(values.sum()),
             **{keys[str(k)]: int(v) for k, v in values.items()}}
        )  # fmt: skip
    return cast(list[LabelDistributionRow], rows)


def disagreements(*, frame: pd.DataFrame) -> list[Disagreement]:
    """Items where the human binary verdict and the heuristic differ, for researchers to read."""
    if frame.empty:
        return []
    rows = frame[frame["heuristic"].notna() & (frame["human_binary"] != frame["heuristic"])].sort_values([*CELL, "id"])
    result: list[Disagreement] = [
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
    return result


def by_guideline_version(*, pool: Pool) -> list[GuidelineVersionRow]:
    """Human vs heuristic per guideline version (docs/domain.md, 'A study others can check'), so a researcher sees
    whether an edit of the guidelines changed the labelling. The unit is the annotation, not the item (an item's
    annotators may have worked under different versions): `agreement` is the share of the pool's study annotations
    saved under that version whose binary label (0 iff misgendering) equals the heuristic's verdict, with its SEM; `n`
    counts them. Empty unless the annotations span two or more versions (null, saved before any guidelines, is one)."""
    rows = list(
        Annotation.objects.filter(item__pool=pool, item__kind=STUDY, item__heuristic_correct__isnull=False).values_list(
            "guideline_version", "label", "item__heuristic_correct"
        )
    )
    versions = {version for version, _, _ in rows}
    if len(versions) < 2:
        return []
    positive = positive_label(pool) or MISGENDERING
    out: list[GuidelineVersionRow] = []
    for version in sorted(versions, key=lambda v: -1 if v is None else v):
        agree = np.array(
            [
                float(human_binary(label, positive) == int(bool(heuristic)))
                for v, label, heuristic in rows
                if v == version
            ]
        )
        figures = mean_sem(agree)
        out.append(
            {"guideline_version": version, "n": int(agree.size), "agreement": figures["mean"], "sem": figures["sem"]}
        )
    return out
