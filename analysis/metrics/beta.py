"""Model-level disagreement (paper eqs. 8-9): a beta distribution fitted by the method of moments."""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from analysis.metrics.agreement import finite


class BetaFit(TypedDict):
    n: int
    mean: float | None
    var: float | None
    alpha: float | None
    beta: float | None


def disagreement_probability(m_prob: np.ndarray, mean_gen: np.ndarray) -> np.ndarray:
    """d_k = m_prob (1 - mean m_gen) + (1 - m_prob) mean m_gen: the chance that one sampled generation disagrees with
    the probability-based verdict on instance k."""
    m_prob = np.asarray(m_prob, dtype=float)
    mean_gen = np.asarray(mean_gen, dtype=float)
    return m_prob * (1 - mean_gen) + (1 - m_prob) * mean_gen


def beta_moments(d: np.ndarray) -> BetaFit:
    """Method of moments with the sample variance (ddof=1): c = mean(1 - mean)/var - 1, alpha = mean c,
    beta = (1 - mean) c.

    Undefined (None) with fewer than two values, zero variance, or c <= 0 (no beta distribution has that much
    variance for its mean).
    """
    # d_k are fractions with the sample count as denominator; rounding drops float noise (1 - 0.8 != 0.2) that
    # would otherwise turn a zero variance into 1e-33 and alpha into 1e31.
    d = np.round(np.asarray(d, dtype=float), 12)
    n = int(d.size)
    if n < 2:
        return {"n": n, "mean": finite(d.mean()) if n else None, "var": None, "alpha": None, "beta": None}
    mean = float(d.mean())
    var = 0.0 if np.all(d == d[0]) else float(d.var(ddof=1))  # the mean of equal values can differ from them
    fit: BetaFit = {"n": n, "mean": mean, "var": var, "alpha": None, "beta": None}
    if var <= 0:
        return fit
    c = mean * (1 - mean) / var - 1
    if c <= 0:
        return fit
    fit["alpha"] = finite(mean * c)
    fit["beta"] = finite((1 - mean) * c)
    return fit
