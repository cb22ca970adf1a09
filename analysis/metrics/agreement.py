"""Agreement between two aligned vectors of ratings (docs/domain.md, 'Metrics' and 'Multi-rater statistics').

Cohen's kappa between raters is statsmodels' on the square table over the whole label set (scikit-learn's value), with
its 95% CI clipped to [-1, 1] (`cohen_kappa_square`); the paper's own computation for probability vs generation, which
reads a one-sided table when one side is constant, is `cohen_kappa`. MCC is Pearson's r of two binary vectors with
scipy's Fisher-z interval, Krippendorff's alpha comes from the `krippendorff` package (nominal), the
standard error of raw agreement is `scipy.stats.sem` (ddof=1), and its bootstrap interval is the percentile
interval of 2,000 seeded resamples of the items (`bootstrap_ci`, the same draws as `scipy.stats.bootstrap`).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from typing import TypedDict

import numpy as np

from analysis.metrics.resampling import resampled_sums

# scipy.stats, statsmodels and krippendorff are imported where they are used: together they take over a second to
# load, and every web process imports this module with its URLs.


def finite(value: float | None) -> float | None:
    """A float for JSON: NaN and infinities become None."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


class RawAgreement(TypedDict):
    n: int
    agreement: float | None
    sem: float | None


class Kappa(TypedDict):
    kappa: float | None
    kappa_ci: list[float] | None


class KappaSquare(TypedDict):
    kappa_square: float | None
    kappa_square_ci: list[float] | None


class Mcc(TypedDict):
    mcc: float | None
    mcc_ci: list[float] | None


def mean_sem(values: Sequence | np.ndarray) -> dict:
    """Mean of a vector and its standard error (ddof=1); None where undefined. The SEM is scipy.stats.sem's own formula,
    std(ddof=1) / sqrt(n), written out: scipy's argument checks were a third of a report's time (benchmarks/README.md)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return {"mean": None, "sem": None}
    sem = np.std(values, ddof=1) / np.sqrt(values.size) if values.size > 1 else None
    return {"mean": float(values.mean()), "sem": finite(sem) if sem is not None else None}


# Bootstrap intervals (docs/domain.md, 'Multi-rater statistics'): items resampled with replacement, 2,000 draws from
# one fixed seed, so that a report gives the same interval every time it is built.
BOOTSTRAP_DRAWS = 2000
BOOTSTRAP_SEED = 131719


def bootstrap_ci(
    values: Sequence | np.ndarray, *, draws: int = BOOTSTRAP_DRAWS, seed: int = BOOTSTRAP_SEED
) -> list[float] | None:
    """The 95% percentile interval [low, high] of the mean of `values` (one value per item) over `draws` resamples
    of the items; None below two items. The resamples are `scipy.stats.bootstrap`'s (method "percentile") with a
    generator seeded by `seed`, drawn in one array and kept per size (`analysis.metrics.resampling`)."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return None
    means = resampled_sums(values[:, None], draws=draws, seed=seed)[:, 0] / values.size
    low, high = np.percentile(means, [2.5, 97.5])
    return [float(low), float(high)]


def bootstrap_ratio_ci(
    numerators: Sequence | np.ndarray,
    denominators: Sequence | np.ndarray,
    *,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> list[float] | None:
    """The 95% percentile interval of sum(numerators) / sum(denominators) with the items (pairs) resampled: the
    accuracy over every sample of an instance resamples instances, each with all of its samples."""
    numerators, denominators = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    if numerators.size < 2:
        return None
    sums = resampled_sums(np.column_stack([numerators, denominators]), draws=draws, seed=seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = sums[:, 0] / sums[:, 1]
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return None
    low, high = np.percentile(ratios, [2.5, 97.5])
    return [float(low), float(high)]


def raw_agreement(a: Sequence | np.ndarray, b: Sequence | np.ndarray) -> RawAgreement:
    """Share of positions where a and b are equal, with the SEM of that 0/1 vector (None below two items)."""
    agree = np.asarray(a) == np.asarray(b)
    figures = mean_sem(agree)
    return {"n": int(agree.size), "agreement": figures["mean"], "sem": figures["sem"]}


def agreement_vector(a: Sequence | np.ndarray, b: Sequence | np.ndarray) -> np.ndarray:
    """1.0 where a and b are equal, 0.0 elsewhere: the per-item values that raw agreement averages."""
    return (np.asarray(a) == np.asarray(b)).astype(float)


def _table(a: np.ndarray, b: np.ndarray, categories: Sequence) -> np.ndarray:
    index = {category: i for i, category in enumerate(categories)}
    k = len(categories)
    codes = np.array([index[x] for x in a], dtype=int) * k + np.array([index[x] for x in b], dtype=int)
    return np.bincount(codes, minlength=k * k).reshape(k, k)


def cohen_kappa(
    a: Sequence | np.ndarray,
    b: Sequence | np.ndarray,
    *,
    categories: Sequence | None = None,
) -> Kappa:
    """Cohen's kappa with its 95% CI from statsmodels, as the paper computes it for probability vs generation
    (docs/domain.md, 'Metrics'). Between raters use `cohen_kappa_square` (docs/domain.md, 'Multi-rater statistics').

    Kappa comes from the square table over `categories` and is undefined (None) only with no items or when chance
    agreement p_e is 1 (both raters gave one and the same category). When exactly one side is constant, p_e = p_o and
    kappa is 0, not None. Its interval is then statsmodels' on the table of the categories each side actually used
    (one row or one column, as `pandas.crosstab` builds it): on the square table statsmodels' variance is 0 there,
    while the paper's tables print this interval (0.000 +- 0.185 in its table 4). An interval of zero width (both
    raters in perfect agreement, or both constant) says nothing and is None.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.size == 0:
        return {"kappa": None, "kappa_ci": None}
    categories = list(categories) if categories is not None else sorted(set(a.tolist()) | set(b.tolist()))
    kappa, low, high = _statsmodels_kappa(_table(a, b, categories))
    if kappa is None:
        return {"kappa": None, "kappa_ci": None}
    constant_a, constant_b = np.unique(a).size < 2, np.unique(b).size < 2
    if constant_a != constant_b:
        kappa = 0.0  # p_e = p_o exactly; the 0 is exact, whatever the rounding of the table's products
        observed = _table_observed(a, b, categories)
        _, low, high = _statsmodels_kappa(observed)
    if low is None or high is None or high - low <= ZERO_WIDTH:
        return {"kappa": kappa, "kappa_ci": None}
    return {"kappa": kappa, "kappa_ci": [low, high]}


# Below this width a confidence interval is rounding noise around a variance of 0.
ZERO_WIDTH = 1e-12


def _table_observed(a: np.ndarray, b: np.ndarray, categories: Sequence) -> np.ndarray:
    """The contingency table restricted to the categories that occur on each side (rows: a, columns: b)."""
    full = _table(a, b, categories)
    rows = [i for i, category in enumerate(categories) if np.any(a == category)]
    columns = [j for j, category in enumerate(categories) if np.any(b == category)]
    return full[np.ix_(rows, columns)]


def cohen_kappa_square(a: Sequence | np.ndarray, b: Sequence | np.ndarray, *, categories: Sequence) -> KappaSquare:
    """Cohen's kappa on the square table over `categories` (docs/domain.md, 'Multi-rater statistics'), with its 95%
    CI clipped to [-1, 1]: statsmodels' `cohens_kappa` on that table, which is scikit-learn's
    `cohen_kappa_score(labels=categories)` (the tests hold the two equal) at less cost: scikit-learn's argument
    checks were a large share of a small report's time (benchmarks/README.md, "Report").

    Undefined (None) with no items or when chance agreement is 1 (both raters gave one and the same category). When
    one side is constant kappa is 0 and the table's variance is 0: an interval of zero width says nothing and is
    None, as it is when the raters agree perfectly."""
    a, b = np.asarray(a), np.asarray(b)
    categories = list(categories)
    if a.size == 0:
        return {"kappa_square": None, "kappa_square_ci": None}
    return kappa_square_of_table(_table(a, b, categories))


def kappa_square_of_table(table: np.ndarray) -> KappaSquare:
    """`cohen_kappa_square` from its square table of counts (rows: a, columns: b; at least one item)."""
    kappa, low, high = _statsmodels_kappa(table)
    if kappa is None:
        return {"kappa_square": None, "kappa_square_ci": None}
    if abs(kappa) < ZERO_WIDTH:  # p_o = p_e exactly (one side constant); the rounding of p_e leaves +-1e-16
        kappa = 0.0
    if low is None or high is None or high - low <= ZERO_WIDTH:
        return {"kappa_square": kappa, "kappa_square_ci": None}
    return {"kappa_square": kappa, "kappa_square_ci": [max(low, -1.0), min(high, 1.0)]}


def _statsmodels_kappa(table: np.ndarray) -> tuple[float | None, float | None, float | None]:
    return _kappa_of_table(table.shape, table.dtype.str, table.tobytes())


# A report rebuilt after a new annotation computes mostly the same tables again: the figures are kept per table (a few
# hundred bytes each; what it saves of a report: benchmarks/README.md, "Caches on the paths people drive").
KAPPA_MEMO_SIZE = 4096


@functools.lru_cache(maxsize=KAPPA_MEMO_SIZE)
def _kappa_of_table(shape: tuple[int, ...], dtype: str, data: bytes) -> tuple[float | None, float | None, float | None]:
    table = np.frombuffer(data, dtype=dtype).reshape(shape)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        kappa, std_kappa = _simple_kappa(table)
        delta = _normal_isf_0025() * std_kappa
        return finite(kappa), finite(kappa - delta), finite(kappa + delta)


def _simple_kappa(table: np.ndarray) -> tuple[float, float]:
    """Simple kappa and its standard error, statsmodels' `cohens_kappa(table)` step for step (the same floats; the
    tests hold the two equal) without its results object, which freezes two scipy distributions per call."""
    table = np.asarray(table, float)
    agree = np.diag(table).sum()
    nobs = table.sum()
    probs = table / nobs
    probs_diag = np.diag(probs)
    freq_row = table.sum(1) / nobs
    freq_col = table.sum(0) / nobs
    prob_exp = freq_col * freq_row[:, None]
    agree_exp = np.diag(prob_exp).sum()
    kappa = (agree / nobs - agree_exp) / (1 - agree_exp)
    term_a = (probs_diag * (1 - (freq_row + freq_col) * (1 - kappa)) ** 2).sum()
    term_b = probs * (freq_col[:, None] + freq_row) ** 2
    d_idx = np.arange(table.shape[0])
    term_b[d_idx, d_idx] = 0
    term_b = (1 - kappa) ** 2 * term_b.sum()
    term_c = (kappa - agree_exp * (1 - kappa)) ** 2
    var_kappa = (term_a + term_b - term_c) / (1 - agree_exp) ** 2 / nobs
    return kappa, np.sqrt(var_kappa)


@functools.cache
def _normal_isf_0025() -> float:
    """The standard normal's upper 2.5% point, as statsmodels' kappa interval takes it."""
    from scipy import stats

    return stats.norm.isf(0.025)


def mcc(a: Sequence | np.ndarray, b: Sequence | np.ndarray) -> Mcc:
    """Matthews correlation as Pearson's r of two binary vectors, with the Fisher-z 95% CI.

    Undefined when either side is constant (never reported as 0) or with fewer than two items. The interval is scipy's
    (`pearsonr(...).confidence_interval()`) as it comes, [-1, 1] where n <= 3 leaves it unbounded (its standard
    error is 1/sqrt(n - 3)).
    """
    from scipy import stats

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size < 2 or np.unique(a).size < 2 or np.unique(b).size < 2:
        return {"mcc": None, "mcc_ci": None}
    result = stats.pearsonr(a, b)
    r = finite(result.statistic)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        interval = result.confidence_interval(0.95)
    low, high = finite(interval.low), finite(interval.high)
    return {"mcc": r, "mcc_ci": [low, high] if low is not None and high is not None else None}


def krippendorff_alpha(a: Sequence | np.ndarray, b: Sequence | np.ndarray) -> float | None:
    """Nominal Krippendorff's alpha of two raters over the same items; undefined when only one value occurs."""
    import krippendorff

    a, b = list(a), list(b)
    if not a:
        return None
    values = sorted(set(a) | set(b))
    if len(values) < 2:
        return None
    codes = {value: i for i, value in enumerate(values)}
    data = np.array([[codes[x] for x in a], [codes[x] for x in b]], dtype=float)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        alpha = krippendorff.alpha(
            reliability_data=data, level_of_measurement="nominal", value_domain=list(range(len(values)))
        )
    return finite(alpha)


def binary_agreement(a: Sequence | np.ndarray, b: Sequence | np.ndarray) -> dict:
    """Everything the report shows for two aligned 0/1 vectors: MCC (undefined on a constant side), kappa as the paper
    computes it (0 on a constant side with the one-sided table's interval, undefined only when p_e = 1), beside it
    `kappa_square` on the square 2x2 table, and raw agreement with its SEM and bootstrap interval."""
    raw = raw_agreement(a, b)
    return {
        "n": raw["n"],
        **mcc(a, b),
        **cohen_kappa(a, b, categories=[0, 1]),
        **cohen_kappa_square(a, b, categories=[0, 1]),
        "agreement": raw["agreement"],
        "agreement_sem": raw["sem"],
        "agreement_boot_ci": bootstrap_ci(agreement_vector(a, b)),
    }
