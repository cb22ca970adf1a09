"""Agreement among k raters per item (docs/domain.md, 'Metrics'): Fleiss' kappa, Krippendorff's alpha with missing
ratings, pairwise Cohen's kappa, and the majority label of an item (docs/domain.md, 'The human label of an item').

Ratings arrive as one list per item, in the order the annotations were made (first annotator first); items may have
different numbers of ratings. Undefined figures are None, never NaN or 0.
"""

from __future__ import annotations

import itertools
import warnings
from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np

from analysis.metrics.agreement import cohen_kappa, finite, raw_agreement


def majority(ratings: Sequence[Hashable]) -> Hashable | None:
    """The most frequent rating; a tie goes to the tied rating given first (the first annotator's where theirs is
    among the tied ones). None for no ratings."""
    if not ratings:
        return None
    counts = Counter(ratings)
    top = max(counts.values())
    return next(rating for rating in ratings if counts[rating] == top)


def fleiss_kappa(items: Sequence[Sequence[Hashable]], *, n_raters: int, categories: Sequence | None = None) -> dict:
    """Fleiss' kappa (statsmodels, method "fleiss") over the items that have exactly `n_raters` ratings; the others
    are left out because Fleiss' kappa needs the same number of raters on every item. Undefined below two raters or
    two items, or when chance agreement is 1 (every rating the same category)."""
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

    rated = [list(ratings) for ratings in items if len(ratings) == n_raters]
    if n_raters < 2 or len(rated) < 2:
        return {"fleiss_kappa": None, "fleiss_n_items": len(rated)}
    categories = list(categories) if categories is not None else sorted({r for item in rated for r in item}, key=str)
    index = {category: i for i, category in enumerate(categories)}
    table = np.zeros((len(rated), len(categories)), dtype=int)
    for row, ratings in enumerate(rated):
        for rating in ratings:
            table[row, index[rating]] += 1
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        kappa = finite(sm_fleiss_kappa(table, method="fleiss"))
    return {"fleiss_kappa": kappa, "fleiss_n_items": len(rated)}


def krippendorff_alpha_all(items: Sequence[Sequence[Hashable]]) -> float | None:
    """Nominal Krippendorff's alpha over every rating of every item, missing ratings allowed (an item with one rating
    adds nothing). Undefined when fewer than two values occur among items with at least two ratings."""
    import krippendorff

    paired = [list(ratings) for ratings in items if len(ratings) >= 2]
    values = sorted({r for item in paired for r in item}, key=str)
    if len(values) < 2:
        return None
    codes = {value: i for i, value in enumerate(values)}
    width = max(len(item) for item in paired)
    # Rows are rating slots (first, second, ... rating of an item): nominal alpha depends only on the values that
    # meet within an item, not on which person gave them.
    data = np.full((width, len(paired)), np.nan)
    for column, ratings in enumerate(paired):
        for row, rating in enumerate(ratings):
            data[row, column] = codes[rating]
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        alpha = krippendorff.alpha(
            reliability_data=data, level_of_measurement="nominal", value_domain=list(range(len(values)))
        )
    return finite(alpha)


def pairwise_agreement(
    items: Sequence[Sequence[tuple[str, Hashable]]], *, categories: Sequence | None = None
) -> list[dict]:
    """Every pair of raters who share items: `annotator_1` < `annotator_2` by name, `n_items`, `raw_agreement` (with
    `raw_agreement_sem`), and Cohen's kappa with its 95% CI on their shared items.

    `items` holds one list of (rater, rating) per item."""
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
        kappa = cohen_kappa(left, right, categories=categories)
        rows.append(
            {
                "annotator_1": a,
                "annotator_2": b,
                "n_items": raw["n"],
                "raw_agreement": raw["agreement"],
                "raw_agreement_sem": raw["sem"],
                "cohen_kappa": kappa["kappa"],
                "kappa_ci": kappa["kappa_ci"],
            }
        )
    return rows
