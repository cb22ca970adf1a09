"""Intervals of rates stay in [0, 1], and the judge's bias-corrected (Rogan-Gladen) rate, against hand-worked tables
and a numpy bootstrap written here (docs/domain.md, "Judges a reviewer trusts")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from analysis.metrics.active import active_mean, stratified_ppi
from analysis.metrics.rates import corrected_rate, rate_interval, rogan_gladen
from analysis.metrics.verdict import ppi_mean

Z = float(stats.norm.ppf(0.975))


def test_it_clips_an_interval_of_a_rate_and_says_so():
    assert rate_interval(-0.193, 1.193) == ([0.0, 1.0], True)
    assert rate_interval(0.2, 0.4) == ([0.2, 0.4], False)
    assert rate_interval(0.9, 1.2) == ([0.9, 1.0], True)


def test_it_clips_a_ppi_interval_that_leaves_zero_one():
    # two labelled contexts far apart: the normal interval is wider than [0, 1]
    y, yhat, unlabelled = [0.0, 1.0], [0.5, 0.5], [0.5, 0.5, 0.5]
    result = ppi_mean(y=y, yhat=yhat, yhat_unlabelled=unlabelled)
    half = Z * float(np.std(y)) / math.sqrt(2)  # a constant judge: the people-only interval (ddof 0)
    assert 0.5 - half < 0 and result["ppi_rate"] == pytest.approx(0.5)
    assert result["ppi_ci"] == [0.0, 1.0] and result["ci_clipped"] is True
    inside = ppi_mean(y=[0.2, 0.3, 0.25, 0.2], yhat=[0.2, 0.3, 0.2, 0.2], yhat_unlabelled=[0.2] * 10)
    assert inside["ci_clipped"] is False and 0 < inside["ppi_ci"][0] < inside["ppi_ci"][1] < 1


def test_it_clips_stratified_and_active_intervals_and_combines_unclipped_variances():
    strata = [("he", [0.0, 1.0], [0.5, 0.5], [0.5] * 3), ("xe", [0.2, 0.3, 0.25], [0.2, 0.3, 0.2], [0.2] * 5)]
    result = stratified_ppi(strata)
    assert result["strata"][0]["ci"] == [0.0, 1.0] and result["strata"][0]["ci_clipped"] is True
    # the combination reads the stratum's own standard error, not the clipped interval's width
    se_he = float(np.std([0.0, 1.0])) / math.sqrt(2)
    assert result["ci"] is not None and result["ci_clipped"] is False
    weights = (5 / 13, 8 / 13)
    xe = ppi_mean(y=[0.2, 0.3, 0.25], yhat=[0.2, 0.3, 0.2], yhat_unlabelled=[0.2] * 5)
    assert xe["ppi_ci"] is not None
    se_xe = (xe["ppi_ci"][1] - xe["ppi_ci"][0]) / (2 * Z)
    half = Z * math.sqrt(weights[0] ** 2 * se_he**2 + weights[1] ** 2 * se_xe**2)
    assert result["ci"][1] - result["ci"][0] == pytest.approx(2 * half)
    active = active_mean(yhat=[0.9, 0.9, 0.9], y=[0.0, math.nan, math.nan], drawn=[True, False, False], pi=[0.1, 1, 1])
    assert active["ci"] is not None and active["ci"][0] == 0.0 and active["ci_clipped"] is True


def test_it_is_the_rogan_gladen_formula_worked_by_hand():
    # se = 8/10, sp = 18/20 on the labelled samples; q = (8 + 2 + 7) / (30 + 20) over every sample
    positives = ([1] * 10, [1] * 8 + [0] * 2)
    negatives = ([0] * 20, [1] * 2 + [0] * 18)
    labelled = [positives, negatives]
    unlabelled = [[1] * 7 + [0] * 13]
    result = corrected_rate(labelled=labelled, unlabelled=unlabelled, draws=200)
    assert (result["se"], result["sp"], result["q"]) == pytest.approx((0.8, 0.9, 17 / 50))
    assert result["rate"] == pytest.approx((17 / 50 + 0.9 - 1) / (0.8 + 0.9 - 1))
    assert (result["n_labelled"], result["N"]) == (2, 3)
    assert rogan_gladen(q=0.05, se=0.8, sp=0.9) == 0.0  # below the judge's false-positive rate: clipped
    assert rogan_gladen(q=0.5, se=0.5, sp=0.54) is None  # se + sp - 1 = 0.04 <= 0.05: undefined
    assert rogan_gladen(q=0.5, se=0.5, sp=0.56) == pytest.approx(1.0)  # (0.06 / 0.06), at the edge


def _reference_bootstrap(labelled, unlabelled, *, draws, seed):
    """The percentile interval written out directly: resample labelled and unlabelled contexts apart, pool their
    samples, compute se, sp, q and the unclipped rate."""
    rng = np.random.default_rng(seed)
    n, m = len(labelled), len(unlabelled)
    picks = rng.integers(0, n, size=(draws, n))
    others = rng.integers(0, m, size=(draws, m))
    values = []
    for row, other in zip(picks, others, strict=True):
        human = np.concatenate([labelled[i][0] for i in row])
        judged = np.concatenate([labelled[i][1] for i in row])
        every = np.concatenate([judged, *[unlabelled[j] for j in other]])
        if not (human == 1).any() or not (human == 0).any():
            continue
        se, sp = judged[human == 1].mean(), 1 - judged[human == 0].mean()
        if se + sp - 1 <= 0.05:
            continue
        values.append((every.mean() + sp - 1) / (se + sp - 1))
    low, high = np.percentile(values, [2.5, 97.5])
    return [min(max(low, 0), 1), min(max(high, 0), 1)]


def test_its_interval_is_a_seeded_bootstrap_that_resamples_labelled_and_unlabelled_units_apart():
    rng = np.random.default_rng(3)
    labelled, unlabelled = [], []
    for _ in range(40):
        human = rng.binomial(1, 0.3, size=3)
        judged = np.where(rng.random(3) < 0.85, human, 1 - human)
        labelled.append((human, judged))
    for _ in range(120):
        unlabelled.append(rng.binomial(1, 0.35, size=5))
    result = corrected_rate(labelled=labelled, unlabelled=unlabelled, draws=2000, seed=0)
    assert result["ci"] == pytest.approx(_reference_bootstrap(labelled, unlabelled, draws=2000, seed=0), abs=1e-12)
    assert result["ci"][0] <= result["rate"] <= result["ci"][1]
    again = corrected_rate(labelled=labelled, unlabelled=unlabelled, draws=2000, seed=0)
    assert again == result  # seeded


def test_a_judge_that_cannot_tell_the_labels_apart_has_no_corrected_rate():
    coin = [([1, 0, 1, 0], [1, 1, 0, 0])]  # se = sp = 0.5
    result = corrected_rate(labelled=coin, unlabelled=[[1, 0]])
    assert result["se"] == 0.5 and result["sp"] == 0.5 and result["rate"] is None and result["ci"] is None
    one_class = corrected_rate(labelled=[([1, 1], [1, 0])], unlabelled=[])
    assert one_class["sp"] is None and one_class["rate"] is None
