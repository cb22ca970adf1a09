"""Intervals of rates, and the judge's bias-corrected rate (docs/domain.md, "Judges a reviewer trusts").

A rate lies in [0, 1], so its interval does too: a normal interval (PPI++, stratified PPI, the active estimate) that
leaves [0, 1] is clipped to it and marked clipped (`rate_interval`), so that a reader sees the figure was cut rather
than reading "0.500 [-0.193, 1.193]".

The bias-corrected rate (Rogan & Gladen 1978; as used for LLM judges by Lee et al. 2025) corrects the judge's
positive share q over all judged units with its sensitivity se and specificity sp against people's labels:
(q + sp - 1) / (se + sp - 1), clipped to [0, 1]; undefined when se + sp - 1 <= 0.05 (the judge separates the labels
too little to correct anything). Its interval is the percentile interval of seeded bootstrap draws that resample the
labelled units (se, sp) and the unlabelled ones (q) apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np

from analysis.metrics.resampling import following_resample_counts, kept_resample_counts

MIN_YOUDEN = 0.05  # se + sp - 1 at or below this: the correction is undefined
BOOTSTRAP_DRAWS = 2000
BOOTSTRAP_SEED = 0


def rate_interval(low: float, high: float) -> tuple[list[float], bool]:
    """The interval of a rate clipped to [0, 1], and whether clipping changed it."""
    clipped = [min(max(float(low), 0.0), 1.0), min(max(float(high), 0.0), 1.0)]
    return clipped, clipped != [float(low), float(high)]


class CorrectedRate(TypedDict):
    se: float | None  # the judge's sensitivity for the positive label, on the labelled units
    sp: float | None  # its specificity
    q: float | None  # its positive share over every judged unit (labelled and not)
    rate: float | None
    ci: list[float] | None
    ci_clipped: bool
    n_labelled: int
    N: int  # every judged unit


def rogan_gladen(*, q: float, se: float, sp: float, clip: bool = True) -> float | None:
    """(q + sp - 1) / (se + sp - 1), clipped to [0, 1] unless not `clip`; None when se + sp - 1 <= MIN_YOUDEN."""
    youden = se + sp - 1
    if youden <= MIN_YOUDEN:
        return None
    value = (q + sp - 1) / youden
    return min(max(value, 0.0), 1.0) if clip else value


def _sums(groups: Sequence[tuple[Sequence[int], Sequence[int]]]) -> np.ndarray:
    """Per labelled unit: [human positives, of them judged positive, human negatives, of them judged positive,
    samples, judged positive]."""
    rows = []
    # In Python's integers (labels are 0 or 1): exact, as numpy's float sums of them are, and without an array per unit.
    for human, judged in groups:
        if len(human) != len(judged):
            raise ValueError("one judge label per labelled sample")
        both = sum(h * j for h, j in zip(human, judged, strict=True))
        size, positives, judged_positive = len(human), sum(human), sum(judged)
        rows.append([positives, both, size - positives, judged_positive - both, size, judged_positive])
    return np.array(rows, dtype=float).reshape(-1, 6)


def _figures(labelled: np.ndarray, unlabelled: np.ndarray) -> np.ndarray:
    """se, sp, q (NaN where undefined) from summed unit figures: labelled (..., 6), unlabelled (..., 2)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        se = labelled[..., 1] / labelled[..., 0]
        sp = 1 - labelled[..., 3] / labelled[..., 2]
        q = (labelled[..., 5] + unlabelled[..., 1]) / (labelled[..., 4] + unlabelled[..., 0])
    return np.stack([se, sp, q], axis=-1)


def corrected_rate(
    *,
    labelled: Sequence[tuple[Sequence[int], Sequence[int]]],
    unlabelled: Sequence[Sequence[int]],
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
    alpha: float = 0.05,
) -> CorrectedRate:
    """The Rogan-Gladen rate of one stratum. The unit is a context (docs/domain.md, "The judge's verdict"): each
    labelled unit is (people's labels, the judge's labels) of its samples with a human label, 1 for the positive
    label and 0 for any other; each unlabelled unit the judge's labels of its samples. se and sp pool the labelled
    samples, q every sample of every unit.

    The interval: `draws` resamples with numpy's `default_rng(seed)`: first every draw's n labelled units
    (`integers(0, n, (draws, n))`), then every draw's m unlabelled ones (`integers(0, m, (draws, m))`), the two
    apart; a resample where the rate is undefined is left out, and an interval needs at least half the draws. The
    percentiles are of the unclipped draws; the interval is then clipped to [0, 1] and marked (`ci_clipped`) as
    every interval of a rate is. `n_labelled` and `N` count units (contexts)."""
    sums = _sums(labelled)
    others = np.array([[len(unit), sum(unit)] for unit in unlabelled], dtype=float).reshape(-1, 2)
    n, m = len(sums), len(others)
    result: CorrectedRate = {
        "se": None, "sp": None, "q": None, "rate": None, "ci": None, "ci_clipped": False,
        "n_labelled": n, "N": n + m,
    }  # fmt: skip
    se, sp, q = (None if np.isnan(value) else float(value) for value in _figures(sums.sum(0), others.sum(0)))
    result["se"], result["sp"], result["q"] = se, sp, q
    if se is None or sp is None or q is None:
        return result
    result["rate"] = rogan_gladen(q=q, se=se, sp=sp)
    if result["rate"] is None or n == 0:
        return result
    # How many times each draw takes each unit, counted by bincount (exact integers, so the products below are the
    # same floats in any order of summation), and kept: a report's judges resample strata of the same sizes.
    counts = kept_resample_counts(n, draws=draws, seed=seed).astype(np.float64)
    other_counts = (
        following_resample_counts(n, m, draws=draws, seed=seed).astype(np.float64) if m else np.zeros((draws, 0))
    )
    drawn = _figures(counts @ sums, other_counts @ others)
    youden = drawn[:, 0] + drawn[:, 1] - 1
    keep = ~np.isnan(drawn).any(axis=1) & (youden > MIN_YOUDEN)
    values = (drawn[keep, 2] + drawn[keep, 1] - 1) / youden[keep]
    if values.size >= draws / 2:
        low, high = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
        result["ci"], result["ci_clipped"] = rate_interval(float(low), float(high))
    return result
