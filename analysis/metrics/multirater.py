"""Agreement among k raters per item (docs/domain.md, 'Metrics' and 'Multi-rater statistics'): Fleiss' kappa and
Gwet's AC1 with each item's own number of raters, Krippendorff's alpha with missing ratings, pairwise Cohen's kappa on
the square table, and the majority label of an item (docs/domain.md, 'The human label of an item').

Ratings arrive as one list per item, in the order the annotations were made (first annotator first); items may have
different numbers of ratings. Undefined figures are None, never NaN or 0.
"""

from __future__ import annotations

import itertools
import warnings
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from analysis.metrics.agreement import (
    ZERO_WIDTH,
    agreement_vector,
    bootstrap_ci,
    cohen_kappa_square,
    finite,
    raw_agreement,
)


def majority(ratings: Sequence[Hashable]) -> Hashable | None:
    """The most frequent rating; a tie goes to the tied rating given first (the first annotator's where theirs is
    among the tied ones). None for no ratings."""
    if not ratings:
        return None
    counts = Counter(ratings)
    top = max(counts.values())
    return next(rating for rating in ratings if counts[rating] == top)


def _count_table(items: Sequence[Sequence[Hashable]], categories: Sequence) -> np.ndarray:
    """Items x categories: how many ratings of each item fell in each category."""
    index = {category: i for i, category in enumerate(categories)}
    k = len(categories)
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    codes = np.fromiter((index[rating] for ratings in items for rating in ratings), dtype=np.int64)
    cells = np.repeat(np.arange(len(items), dtype=np.int64) * k, lengths) + codes
    return np.bincount(cells, minlength=len(items) * k).reshape(len(items), k).astype(float)


def _categories(items: Sequence[Sequence[Hashable]], categories: Sequence | None) -> list:
    """The given label set, then any other rating seen (sorted): a rating outside the pool's labels still counts."""
    seen = sorted({r for item in items for r in item}, key=str)
    given = list(categories) if categories is not None else []
    return given + [r for r in seen if r not in given]


def fleiss_kappa(items: Sequence[Sequence[Hashable]], *, categories: Sequence | None = None) -> dict:
    """Fleiss' kappa over every item with at least two ratings, each item with its own number of raters n_i
    (docs/domain.md, 'Multi-rater statistics'): P_i = sum_j n_ij (n_ij - 1) / (n_i (n_i - 1)), p_j = the mean over
    items of n_ij / n_i, P_e = sum_j p_j^2, kappa = (mean P_i - P_e) / (1 - P_e). With the same n on every item this
    is statsmodels' `fleiss_kappa`. Undefined below two items or when P_e is 1 (every rating the same category)."""
    rated = [list(ratings) for ratings in items if len(ratings) >= 2]
    return fleiss_kappa_of_table(_count_table(rated, _categories(rated, categories)))


def fleiss_kappa_of_table(table: np.ndarray) -> dict:
    """`fleiss_kappa` from its items x categories count table (every item with at least two ratings)."""
    if table.shape[0] < 2:
        return {"fleiss_kappa": None, "fleiss_n_items": int(table.shape[0])}
    n_i = table.sum(axis=1)
    p_i = (table * (table - 1)).sum(axis=1) / (n_i * (n_i - 1))
    p_j = (table / n_i[:, None]).mean(axis=0)
    p_e = float((p_j**2).sum())
    if p_e >= 1 - 1e-12:
        return {"fleiss_kappa": None, "fleiss_n_items": int(table.shape[0])}
    return {"fleiss_kappa": finite((p_i.mean() - p_e) / (1 - p_e)), "fleiss_n_items": int(table.shape[0])}


def gwet_ac1(items: Sequence[Sequence[Hashable]], *, categories: Sequence | None = None) -> dict:
    """Gwet's AC1 over every item with at least two ratings, with its 95% CI (docs/domain.md, 'Multi-rater
    statistics'): Gwet (2008) as irrCAC computes it, chance agreement p_e = sum_k pi_k (1 - pi_k) / (q - 1) over the
    q categories of the label set, the variance from each item's contribution, a t interval with n - 1 degrees of
    freedom, clipped to [-1, 1]. Unlike kappa it stays high when one label dominates and the raters agree on it.
    Undefined below one item with two ratings or two categories; the interval below two such items or at zero
    width."""
    rated = [list(ratings) for ratings in items if len(ratings) >= 2]
    labels = _categories(rated, categories)
    return gwet_ac1_of_table(_count_table(rated, labels), len(labels))


def gwet_ac1_of_table(table: np.ndarray, q: int, *, interval: bool = True) -> dict:
    """`gwet_ac1` from its items x categories count table (every item with at least two ratings) over q categories;
    without its interval (None) where `interval` is false."""
    n = table.shape[0]
    if not n or q < 2:
        return {"gwet_ac1": None, "gwet_ac1_ci": None}
    r_i = table.sum(axis=1)
    p_a_i = (table * (table - 1)).sum(axis=1) / (r_i * (r_i - 1))
    p_a = float(p_a_i.mean())
    pi = (table / r_i[:, None]).mean(axis=0)
    p_e = float((pi * (1 - pi)).sum() / (q - 1))
    ac1 = (p_a - p_e) / (1 - p_e)
    if n < 2 or not interval:
        return {"gwet_ac1": finite(ac1), "gwet_ac1_ci": None}
    from scipy import stats

    ac1_i = (p_a_i - p_e) / (1 - p_e)
    p_e_i = (table @ (1 - pi)) / r_i / (q - 1)
    ac1_i_star = ac1_i - 2 * (1 - ac1) * (p_e_i - p_e) / (1 - p_e)
    stderr = float(np.sqrt(((ac1_i_star - ac1) ** 2).sum() / (n * (n - 1))))
    if stderr <= ZERO_WIDTH:
        return {"gwet_ac1": finite(ac1), "gwet_ac1_ci": None}
    low, high = stats.t.interval(0.95, df=n - 1, loc=ac1, scale=stderr)
    return {"gwet_ac1": finite(ac1), "gwet_ac1_ci": [max(float(low), -1.0), min(float(high), 1.0)]}


def krippendorff_alpha_all(
    items: Sequence[Sequence[Hashable]], *, numbers: Mapping[Any, float] | None = None, level: str = "nominal"
) -> float | None:
    """Krippendorff's alpha over every rating of every item at a level of measurement (krippendorff's
    `level_of_measurement`: nominal, ordinal or interval), missing ratings allowed (an item with one rating adds
    nothing). `numbers` gives each rating its rank (ordinal) or value (interval); nominal ratings are coded by name.
    Undefined when fewer than two values occur among items with at least two ratings."""
    import krippendorff

    paired = [list(ratings) for ratings in items if len(ratings) >= 2]
    values = sorted({r for item in paired for r in item}, key=str)
    if len(values) < 2:
        return None
    if numbers is None or level == "nominal":
        codes = {value: float(i) for i, value in enumerate(values)}
        domain: list | None = list(range(len(values)))
    else:
        codes = {value: float(numbers[value]) for value in values}
        domain = sorted(set(numbers.values())) if level == "ordinal" else None
    width = max(len(item) for item in paired)
    # Rows are rating slots (first, second, ... rating of an item): alpha depends only on the values that meet within
    # an item, not on which person gave them.
    data = np.full((width, len(paired)), np.nan)
    for column, ratings in enumerate(paired):
        for row, rating in enumerate(ratings):
            data[row, column] = codes[rating]
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        alpha = krippendorff.alpha(
            reliability_data=data,
            level_of_measurement=level,  # type: ignore[arg-type]  # a pool's scale: nominal, ordinal or interval
            value_domain=domain,
        )
    return finite(alpha)


def pooled_pairs(items: Sequence[Sequence[Hashable]]) -> tuple[np.ndarray, np.ndarray]:
    """Per item with at least two ratings: how many of its pairs of ratings agree, and how many pairs it has (every
    pair of its ratings, n_i (n_i - 1) / 2; docs/domain.md, 'Headline figures')."""
    agree, pairs = [], []
    for ratings in items:
        if len(ratings) < 2:
            continue
        counts = Counter(ratings)
        agree.append(sum(c * (c - 1) // 2 for c in counts.values()))
        pairs.append(len(ratings) * (len(ratings) - 1) // 2)
    return np.asarray(agree, dtype=float), np.asarray(pairs, dtype=float)


def pairwise_agreement(
    items: Sequence[Sequence[tuple[str, Hashable]]],
    *,
    categories: Sequence | None = None,
    scale: str = "nominal",
    numbers: Mapping[Any, float] | None = None,
) -> list[dict]:
    """Every pair of raters who share items: `annotator_1` < `annotator_2` by name, `n_items`, `raw_agreement` (with
    `raw_agreement_sem` and `raw_agreement_boot_ci`), Cohen's kappa on the square table over `categories` with its 95%
    CI, and Gwet's AC1 with its CI, on their shared items; on an ordinal or interval scale (`numbers`: each rating's
    rank or value) weighted kappa, linear and quadratic, and MAE and RMSE (None on a nominal scale).

    `items` holds one list of (rater, rating) per item."""
    from analysis.metrics.scales import errors, weighted_kappas

    shared: dict[tuple[str, str], tuple[list, list]] = {}
    for ratings in items:
        by_rater = dict(ratings)
        for a, b in itertools.combinations(sorted(by_rater), 2):
            left, right = shared.setdefault((a, b), ([], []))
            left.append(by_rater[a])
            right.append(by_rater[b])
    rows = []
    for (a, b), (left, right) in sorted(shared.items()):
        raw = raw_agreement(left, right)
        labels = _categories([left, right], categories)
        kappa = cohen_kappa_square(left, right, categories=labels)
        scaled: dict = {key: None for key in SCALE_KEYS}
        if numbers is not None and scale != "nominal":
            scaled.update(weighted_kappas(left, right, labels=list(categories or labels), scale=scale))
            scaled.update(errors([numbers[x] for x in left], [numbers[x] for x in right]))
        rows.append(
            {
                "annotator_1": a,
                "annotator_2": b,
                "n_items": raw["n"],
                "raw_agreement": raw["agreement"],
                "raw_agreement_sem": raw["sem"],
                "raw_agreement_boot_ci": bootstrap_ci(agreement_vector(left, right)),
                "cohen_kappa": kappa["kappa_square"],
                "kappa_ci": kappa["kappa_square_ci"],
                **gwet_ac1([list(pair) for pair in zip(left, right, strict=True)], categories=labels),
                **scaled,
            }
        )
    return rows


# The figures an ordinal or interval scale adds to a pair of raters (None on a nominal one).
SCALE_KEYS = ("weighted_kappa_linear", "weighted_kappa_quadratic", "mae", "rmse")


def light_kappa(
    items: Sequence[Sequence[tuple[str, Hashable]]],
    *,
    categories: Sequence,
    scale: str = "nominal",
    min_shared: int = 30,
) -> dict:
    """Light's kappa (docs/domain.md, 'Headline figures'): the mean of the pairwise Cohen's kappas (square table over
    `categories`, as `pairwise_agreement`'s) over the rater pairs sharing at least `min_shared` items (`light_pairs`
    of them; None where none does), and on an ordinal or interval scale the mean weighted kappas (linear, quadratic:
    scikit-learn's `cohen_kappa_score(weights=...)` over the labels in the scale's order) the same way.

    Every pair at once, whatever the number of raters: with O_k the raters x items indicator of label k and P of any
    label, a pair's weighted disagreement is sum_k (O_k Q_k^T)[a, b] (Q_k = sum_l w_kl O_l) and its expected one
    sum_kl w_kl C_k[a, b] C_l[b, a] / n[a, b] (C_k = O_k P^T: a's labels k on the items shared with b, n = P P^T);
    kappa = 1 - observed / expected, Cohen's with w = 1 - I. A crowd pool's 600 raters are 179,700 pairs: a few
    matrix products, where a table per pair took minutes."""
    from annotation.labelset import ordered_labels

    order = list(categories) if scale == "nominal" else ordered_labels(list(categories), scale)
    seen = {rating for ratings in items for _, rating in ratings}
    order += sorted(seen - set(order), key=str)
    weightings = {"cohen_kappa": 1.0 - np.eye(len(order))}
    if scale != "nominal":
        distance = np.abs(np.subtract.outer(np.arange(len(order)), np.arange(len(order)))).astype(float)
        weightings.update({"weighted_kappa_linear": distance, "weighted_kappa_quadratic": distance**2})
    out: dict = {"light_pairs": 0, **{key: None for key in weightings}}
    raters = sorted({rater for ratings in items for rater, _ in ratings})
    if len(raters) < 2:
        return out
    rater_of = {rater: index for index, rater in enumerate(raters)}
    label_of = {label: index for index, label in enumerate(order)}
    cells = [
        (rater_of[rater], item, label_of[rating]) for item, ratings in enumerate(items) for rater, rating in ratings
    ]
    rater_index, item_index, label_index = (np.array(column, dtype=np.int64) for column in zip(*cells, strict=True))
    onehot = np.zeros((len(order), len(raters), len(items)))
    onehot[label_index, rater_index, item_index] = 1.0
    present = onehot.sum(axis=0)
    shared = present @ present.T
    upper = np.triu(np.ones_like(shared, dtype=bool), k=1)
    chosen = upper & (shared >= min_shared)
    out["light_pairs"] = int(chosen.sum())
    if not out["light_pairs"]:
        return out
    counts = np.einsum("kai,bi->kab", onehot, present, optimize=True)  # C_k
    n = shared[chosen]
    for key, weights in weightings.items():
        mixed = np.einsum("kl,lbi->kbi", weights, onehot, optimize=True)  # Q_k
        observed = np.einsum("kai,kbi->ab", onehot, mixed, optimize=True)[chosen]
        expected = np.einsum("kl,kab,lba->ab", weights, counts, counts, optimize=True)[chosen] / n
        with np.errstate(divide="ignore", invalid="ignore"):
            values = 1.0 - observed / expected
        defined = (expected > ZERO_WIDTH * n) & np.isfinite(values)
        values = np.where(np.abs(values) < ZERO_WIDTH, 0.0, values)
        out[key] = float(values[defined].mean()) if defined.any() else None
    return out
