"""Spending people's labels where they count (docs/domain.md, section "Spending people's labels where they count"):
the active estimate of a rate from an active pool, stratified PPI over pronoun families, and the budget planner.

Each is a pure function of plain vectors. The unit is a context (instance x setting): Y its share of human labels
that are positive, Yhat the judge's mean probability of the positive label (docs/domain.md, "The judge's verdict").
The draw itself (inclusion probabilities and the Bernoulli draw) is annotation's (annotation/active.py): the pool is
drawn there. Undefined figures are None, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypedDict

import numpy as np

from analysis.metrics.rates import rate_interval
from analysis.metrics.verdict import ppi_mean_se
from annotation.active import inclusion_scale, uncertainty

HALF_WIDTHS = (0.02, 0.05, 0.10)
UNREACHABLE = "unreachable"

Vector = Sequence[float] | np.ndarray


def _z(alpha: float) -> float:
    from scipy import stats

    return float(stats.norm.ppf(1 - alpha / 2))


# -- The active estimate ---------------------------------------------------------------------------------------------


class ActiveMean(TypedDict):
    rate: float | None
    ci: list[float] | None  # clipped to [0, 1]
    ci_clipped: bool  # the active interval left [0, 1] and was clipped to it
    human_rate: float | None  # people only, each label weighted by 1 / pi (Horvitz-Thompson)
    human_ci: list[float] | None
    n_labelled: int
    n_incomplete: int
    N: int


def active_mean(
    *, yhat: Vector, y: Vector, drawn: Sequence[bool] | np.ndarray, pi: Vector, alpha: float = 0.05
) -> ActiveMean:
    """The active estimate of a stratum's mean over its N contexts (Zrnic & Candes 2024). Per context i: Yhat_i,
    Y_i (NaN where people have not labelled it), xi_i whether the draw took it, pi_i its inclusion probability
    (read only where xi_i). Z_i = Yhat_i + (Y_i - Yhat_i) xi_i / pi_i; theta = mean(Z); the interval
    theta +- z_{1-alpha/2} sd(Z, ddof=1) / sqrt(N). Beside it the people-only Horvitz-Thompson estimate, the same with
    Yhat = 0: mean(Y_i xi_i / pi_i), its interval from sd(Y xi / pi, ddof=1) / sqrt(N). The active interval is
    clipped to [0, 1] and marked (`ci_clipped`).

    A drawn context without Y makes the estimate incomplete: `n_incomplete` counts them and no estimate is given
    until they are labelled (leaving them out would bias it). Both need N >= 2."""
    yhat_v = np.asarray(yhat, dtype=float)
    y_v = np.asarray(y, dtype=float)
    xi = np.asarray(drawn, dtype=bool)
    pi_v = np.asarray(pi, dtype=float)
    if not (yhat_v.shape == y_v.shape == xi.shape == pi_v.shape):
        raise ValueError("one Yhat, Y, draw and pi per context")
    labelled = xi & ~np.isnan(y_v)
    N = int(yhat_v.size)
    result: ActiveMean = {
        "rate": None,
        "ci": None,
        "ci_clipped": False,
        "human_rate": None,
        "human_ci": None,
        "n_labelled": int(labelled.sum()),
        "n_incomplete": int((xi & np.isnan(y_v)).sum()),
        "N": N,
    }
    if result["n_incomplete"] or N < 2:
        return result
    if np.any(pi_v[xi] <= 0):
        raise ValueError("a drawn context has an inclusion probability of 0")
    z = _z(alpha)
    weight = np.zeros(N)
    weight[xi] = 1.0 / pi_v[xi]
    residual = np.where(xi, y_v - yhat_v, 0.0)
    for key, values in (("", yhat_v + residual * weight), ("human_", np.where(xi, y_v, 0.0) * weight)):
        theta = float(values.mean())
        half = z * float(values.std(ddof=1)) / math.sqrt(N)
        result[f"{key}rate"] = theta  # type: ignore[literal-required]
        result[f"{key}ci"] = [theta - half, theta + half]  # type: ignore[literal-required]
    assert result["ci"] is not None
    result["ci"], result["ci_clipped"] = rate_interval(*result["ci"])
    return result


# -- Stratified PPI ----------------------------------------------------------------------------------------------------


class Stratum(TypedDict):
    pronoun: str
    n: int  # labelled contexts
    N: int  # all contexts of the stratum
    weight: float  # N_k / N
    rate: float | None  # PPI++ within the stratum
    ci: list[float] | None  # clipped to [0, 1]
    ci_clipped: bool


class StratifiedMean(TypedDict):
    rate: float | None
    ci: list[float] | None  # clipped to [0, 1]
    ci_clipped: bool
    strata: list[Stratum]


def stratified_ppi(strata: Sequence[tuple[str, Vector, Vector, Vector]], *, alpha: float = 0.05) -> StratifiedMean:
    """Stratified prediction-powered inference (Fisch et al. 2024): per stratum k (name, Y, Yhat of its labelled
    contexts, Yhat of its unlabelled ones) the PPI++ estimate theta_k and its variance var_k ("The judge's verdict":
    `ppi_mean`; var_k its standard error squared), combined as theta = sum_k w_k theta_k with w_k = N_k / N (N_k every context of
    k, labelled or not), variance sum_k w_k^2 var_k and the normal interval. Undefined (None) when a stratum has no
    PPI estimate (fewer than 2 labelled or no unlabelled contexts). Each interval is clipped to [0, 1] and marked
    (`ci_clipped`); the combination reads each stratum's unclipped standard error."""
    z = _z(alpha)
    sizes = [len(y) + len(unlabelled) for _, y, _, unlabelled in strata]
    total = sum(sizes)
    rows: list[Stratum] = []
    theta, variance, defined = 0.0, 0.0, bool(strata)
    for (name, y, yhat, unlabelled), size in zip(strata, sizes, strict=True):
        figures, se = ppi_mean_se(y=y, yhat=yhat, yhat_unlabelled=unlabelled, alpha=alpha)
        weight = size / total if total else 0.0
        rows.append({"pronoun": name, "n": len(y), "N": size, "weight": weight, "rate": figures["ppi_rate"],
                     "ci": figures["ppi_ci"], "ci_clipped": figures["ci_clipped"]})  # fmt: skip
        if figures["ppi_rate"] is None or se is None:
            defined = False
            continue
        theta += weight * figures["ppi_rate"]
        variance += weight**2 * se**2
    if not defined:
        return {"rate": None, "ci": None, "ci_clipped": False, "strata": rows}
    half = z * math.sqrt(variance)
    ci, clipped = rate_interval(theta - half, theta + half)
    return {"rate": theta, "ci": ci, "ci_clipped": clipped, "strata": rows}


# -- The budget planner ----------------------------------------------------------------------------------------------


def ppi_lambda(*, y: Vector, yhat: Vector, yhat_unlabelled: Vector) -> float:
    """lambda as PPI++ tunes it for a mean (ppi_py 0.2.3's `_calc_lhat_glm` with clipping, as `ppi_mean` uses it):
    cov(Y, Yhat) / ((1 + n/N) var(Yhat over all n + N units, ddof 1)) clipped to [0, 1]; 0 when Yhat is constant."""
    labelled, predicted = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
    unlabelled = np.asarray(yhat_unlabelled, dtype=float)
    n, N = labelled.size, unlabelled.size
    variance = float(np.var(np.concatenate([predicted, unlabelled]), ddof=1))
    if variance <= 0 or n < 1 or N < 1:
        return 0.0
    covariance = float(((labelled - labelled.mean()) * (predicted - predicted.mean())).mean())
    return min(max(covariance / ((1 + n / N) * variance), 0.0), 1.0)


def people_n(*, y: Vector, half_width: float, alpha: float = 0.05) -> int | None:
    """People alone: n = ceil((z s_Y / h)^2), s_Y the pilot's standard deviation of Y (ddof 1); 0 when the pilot's Y
    does not vary (the formula's answer: the pilot shows no spread to pin down). None under 2 units."""
    values = np.asarray(y, dtype=float)
    if values.size < 2:
        return None
    return math.ceil((_z(alpha) * float(values.std(ddof=1)) / half_width) ** 2)


def ppi_n(
    *, y: Vector, yhat: Vector, yhat_unlabelled: Vector, half_width: float, alpha: float = 0.05
) -> int | str | None:
    """With the judge (PPI++): the smallest n with z sqrt(var(Y - lam Yhat) / n + lam^2 var(Yhat_u) / N) <= h, lam
    tuned on the pilot, variances with ddof 1, N the pilot's unlabelled contexts. "unreachable" when the second term
    alone reaches h (no number of labels narrows the interval enough). None under 2 labelled or 2 unlabelled units."""
    labelled, predicted = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
    unlabelled = np.asarray(yhat_unlabelled, dtype=float)
    if labelled.size < 2 or unlabelled.size < 2:
        return None
    lam = ppi_lambda(y=labelled, yhat=predicted, yhat_unlabelled=unlabelled)
    residual = float(np.var(labelled - lam * predicted, ddof=1))
    floor = lam**2 * float(np.var(unlabelled, ddof=1)) / unlabelled.size
    room = (half_width / _z(alpha)) ** 2 - floor
    if room <= 0:
        return UNREACHABLE
    return max(1, math.ceil(residual / room))


def active_half_width(
    *, budget: float, yhat_all: Vector, y: Vector, yhat: Vector, pilot_weight: Vector | None = None, alpha: float = 0.05
) -> float:
    """The active interval's expected half-width at budget B over the job's N contexts (Yhat of each in `yhat_all`):
    z sqrt((var(Y) + mean_i r_i^2 (1/pi_i(B) - 1)) / N), the expected sample variance of Z (Z's variance over
    contexts is var(Y) plus the draw's). r = Y - Yhat and var(Y) (ddof 1) come from the pilot's contexts, each pilot
    context's pi(B) the one its Yhat gets in the job at budget B; `pilot_weight` (1 / the pilot's own inclusion
    probability, for an active pilot) weights the pilot's averages."""
    everyone = np.asarray(yhat_all, dtype=float)
    labelled, predicted = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
    weight = np.ones(labelled.size) if pilot_weight is None else np.asarray(pilot_weight, dtype=float)
    pi_pilot = np.minimum(1.0, inclusion_scale(everyone, budget) * uncertainty(predicted))
    mean_y = float(np.average(labelled, weights=weight))
    var_y = float(np.average((labelled - mean_y) ** 2, weights=weight)) * labelled.size / (labelled.size - 1)
    extra = float(np.average((labelled - predicted) ** 2 * (1 / pi_pilot - 1), weights=weight))
    return _z(alpha) * math.sqrt((var_y + extra) / everyone.size)


def active_n(
    *, yhat_all: Vector, y: Vector, yhat: Vector, half_width: float, pilot_weight: Vector | None = None,
    alpha: float = 0.05,
) -> int | str | None:  # fmt: skip
    """The active budget: the smallest whole B (contexts) at which `active_half_width` reaches h, by bisection over
    1..N (the half-width falls as B grows); "unreachable" when even labelling every context does not. None under 2
    pilot units."""
    everyone = np.asarray(yhat_all, dtype=float)
    if np.asarray(y).size < 2 or everyone.size < 2:
        return None

    def width(budget: float) -> float:
        return active_half_width(
            budget=budget, yhat_all=everyone, y=y, yhat=yhat, pilot_weight=pilot_weight, alpha=alpha
        )

    size = int(everyone.size)
    if width(size) > half_width:
        return UNREACHABLE
    low, high = 1, size  # width(high) <= h
    if width(low) <= half_width:
        return low
    while high - low > 1:
        middle = (low + high) // 2
        if width(middle) <= half_width:
            high = middle
        else:
            low = middle
    return high
