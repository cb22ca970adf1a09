"""Figures of ordinal and interval scales (docs/domain.md, "Scales"): the number of each label (an ordinal label's
rank in the declared order, an interval label's value), weighted kappa (linear and quadratic, scikit-learn's
`cohen_kappa_score(weights=...)` over the labels in the scale's order), MAE and RMSE, and an item's human value
(the median of its annotations on an ordinal scale, the lower middle one for an even count; the mean on an
interval scale). A nominal scale has none of these."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from analysis.metrics.agreement import finite
from annotation.labelset import label_value, ordered_labels
from annotation.models import INTERVAL, NOMINAL, ORDINAL

WEIGHTS = ("linear", "quadratic")


def label_numbers(labels: Sequence[str], scale: str) -> dict[str, float] | None:
    """label -> its number on the scale (None on a nominal scale)."""
    if scale == ORDINAL:
        return {label: float(rank) for rank, label in enumerate(labels)}
    if scale == INTERVAL:
        return {label: float(label_value(label) or 0.0) for label in labels}
    return None


def weighted_kappas(a: Sequence[str], b: Sequence[str], *, labels: Sequence[str], scale: str) -> dict:
    """`weighted_kappa_linear` and `weighted_kappa_quadratic` of two raters over the same items, the labels in the
    scale's order; None where undefined (no items, or chance disagreement 0)."""
    from sklearn.metrics import cohen_kappa_score

    if scale == NOMINAL:
        return {}
    order = ordered_labels(list(labels), scale)
    order += sorted({*a, *b} - set(order), key=str)
    out: dict = {}
    for weights in WEIGHTS:
        value = None
        if len(a):
            with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                value = finite(cohen_kappa_score(list(a), list(b), labels=order, weights=weights))
        out[f"weighted_kappa_{weights}"] = value
    return out


def errors(a: Sequence[float], b: Sequence[float]) -> dict:
    """`mae` and `rmse` of two aligned vectors of numbers; None with none."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size == 0:
        return {"mae": None, "rmse": None}
    return {"mae": float(np.abs(x - y).mean()), "rmse": float(np.sqrt(((x - y) ** 2).mean()))}


def human_value(values: Sequence[float], scale: str) -> float | None:
    """An item's human value from its annotations' numbers: the median (ordinal; the lower middle value for an even
    count) or the mean (interval); None with none or on a nominal scale."""
    if not len(values) or scale == NOMINAL:
        return None
    ordered = sorted(values)
    if scale == ORDINAL:
        return float(ordered[(len(ordered) - 1) // 2])
    return float(np.mean(ordered))
