"""Spending people's labels where they count (docs/domain.md): the active draw, the active estimate, stratified PPI
and the budget planner, each against an independent computation (numpy, scipy's root finder, ppi_py 0.2.3), and
simulations of 1,000 pools showing the 95% intervals cover a known rate."""

from __future__ import annotations

import math
import sys
import types
import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from analysis.metrics.active import (
    UNREACHABLE,
    active_half_width,
    active_mean,
    active_n,
    people_n,
    ppi_lambda,
    ppi_n,
    stratified_ppi,
)
from annotation.active import ActiveDrawError, active_draw, inclusion_probabilities, uncertainty

Z = float(stats.norm.ppf(0.975))


@pytest.fixture(scope="module")
def ppi_py():
    """ppi_py, imported as tests/analysis/test_verdict_metrics.py does (a stand-in njit while numba is absent)."""
    stand_in = None
    if "numba" not in sys.modules:
        try:
            import numba  # noqa: F401
        except ImportError:
            stand_in = types.ModuleType("numba")
            stand_in.njit = lambda function=None, **options: function if callable(function) else (lambda f: f)  # type: ignore[attr-defined]
            sys.modules["numba"] = stand_in
    with warnings.catch_warnings():
        import ppi_py as module
    if stand_in is not None:
        del sys.modules["numba"]
    return module


def _job(seed: int, N: int, *, strata: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A synthetic judged job of N contexts of 5 samples: Y the share people call misgendering, Yhat the judge's
    mean probability of it (informative, imperfect), and a pronoun family per context whose rates differ."""
    rng = np.random.default_rng(seed)
    family = rng.integers(0, strata, size=N)
    base = np.array([0.05, 0.15, 0.35, 0.6])[family % 4]
    rate = np.clip(rng.beta(2, 2, size=N) * 0.4 + base - 0.2, 0.01, 0.99)
    y = rng.binomial(5, rate) / 5
    yhat = np.clip(rate + rng.normal(0, 0.12, size=N), 0.001, 0.999)
    return y, yhat, family


# -- the draw, step by step --------------------------------------------------------------------------------------------


class TestActiveDraw:
    def test_uncertainty_is_the_binomial_sd_floored_at_005(self):
        yhat = np.array([0.0, 0.001, 0.2, 0.5, 0.9, 1.0])
        expected = [max(math.sqrt(p * (1 - p)), 0.05) for p in yhat]
        assert uncertainty(yhat) == pytest.approx(expected)

    @pytest.mark.parametrize("budget", [1.0, 12.5, 80.0, 199.0])
    def test_probabilities_are_min_1_c_u_summing_to_the_budget(self, budget):
        _, yhat, _ = _job(3, 200)
        u = np.maximum(np.sqrt(yhat * (1 - yhat)), 0.05)
        c = optimize.brentq(lambda c: np.minimum(1, c * u).sum() - budget, 0, 1 / u.min(), xtol=1e-12)
        pi = inclusion_probabilities(yhat, budget)
        assert pi == pytest.approx(np.minimum(1, c * u), abs=1e-7)
        assert pi.sum() == pytest.approx(budget, abs=1e-6)
        assert pi.max() <= 1
        # the judge's least sure context is the likeliest drawn
        assert pi[np.argmin(np.abs(yhat - 0.5))] == pi.max()

    def test_a_budget_of_every_context_takes_them_all(self):
        assert inclusion_probabilities([0.1, 0.5, 0.9], 3) == pytest.approx([1, 1, 1])

    @pytest.mark.parametrize("budget", [0, -1, 4, math.nan])
    def test_a_budget_outside_the_job_is_refused(self, budget):
        with pytest.raises(ActiveDrawError, match="budget"):
            inclusion_probabilities([0.1, 0.5, 0.9], budget)

    def test_the_draw_is_one_uniform_per_context_from_default_rng(self):
        pi = inclusion_probabilities(_job(5, 300)[1], 40)
        drawn = active_draw(pi, 11)
        assert np.array_equal(drawn, np.random.default_rng(11).random(300) < pi)
        assert np.array_equal(drawn, active_draw(pi, 11))  # reproducible
        assert not np.array_equal(drawn, active_draw(pi, 12))


# -- the active estimate ---------------------------------------------------------------------------------------------


class TestActiveMean:
    def _pool(self, seed=1, N=400, budget=60):
        y, yhat, _ = _job(seed, N)
        pi = inclusion_probabilities(yhat, budget)
        drawn = active_draw(pi, seed)
        observed = np.where(drawn, y, np.nan)
        return y, yhat, pi, drawn, observed

    def test_it_is_the_mean_of_z_with_its_normal_interval(self):
        _, yhat, pi, drawn, observed = self._pool()
        result = active_mean(yhat=yhat, y=observed, drawn=drawn, pi=pi)
        z_values = yhat + np.nan_to_num(observed - yhat) * drawn / pi
        half = Z * z_values.std(ddof=1) / math.sqrt(yhat.size)
        assert result["rate"] == pytest.approx(z_values.mean())
        assert result["ci"] == pytest.approx([z_values.mean() - half, z_values.mean() + half])
        ht = np.nan_to_num(observed) * drawn / pi
        ht_half = Z * ht.std(ddof=1) / math.sqrt(yhat.size)
        assert result["human_rate"] == pytest.approx(ht.mean())
        assert result["human_ci"] == pytest.approx([ht.mean() - ht_half, ht.mean() + ht_half])
        assert (result["n_labelled"], result["n_incomplete"], result["N"]) == (int(drawn.sum()), 0, yhat.size)

    def test_the_point_estimate_is_ppi_pys_rectified_mean_with_inverse_probability_weights(self, ppi_py):
        """ppi_py (lam = 1, weights 1 / pi) normalises its weights to sum n (a Hajek mean of the residuals); the
        active estimate's rectifier is the Horvitz-Thompson sum, the same residual mean times sum(1 / pi) / N."""
        _, yhat, pi, drawn, observed = self._pool(seed=4)
        N = yhat.size
        weights = 1 / pi[drawn]
        weighted = float(
            np.squeeze(ppi_py.ppi_mean_pointestimate(observed[drawn], yhat[drawn], yhat, lam=1, w=weights))
        )
        expected = yhat.mean() + (weighted - yhat.mean()) * weights.sum() / N
        result = active_mean(yhat=yhat, y=observed, drawn=drawn, pi=pi)
        assert result["rate"] == pytest.approx(expected)

    def test_a_drawn_context_without_labels_makes_it_incomplete(self):
        _, yhat, pi, drawn, observed = self._pool()
        first = int(np.flatnonzero(drawn)[0])
        observed[first] = np.nan
        result = active_mean(yhat=yhat, y=observed, drawn=drawn, pi=pi)
        assert result["n_incomplete"] == 1
        assert result["n_labelled"] == int(drawn.sum()) - 1
        assert result["rate"] is None and result["ci"] is None and result["human_rate"] is None

    def test_every_context_drawn_gives_the_plain_mean(self):
        y, yhat, _, _, _ = self._pool()
        everything = np.ones(y.size, dtype=bool)
        result = active_mean(yhat=yhat, y=y, drawn=everything, pi=np.ones(y.size))
        assert result["rate"] == pytest.approx(y.mean())
        assert result["human_rate"] == pytest.approx(y.mean())

    def test_1000_active_pools_cover_the_known_rate(self):
        """A synthetic judged job with a known rate (its contexts' mean Y): 1,000 active draws at a budget of 150 of
        2,000 contexts; the 95% interval covers the rate in at least 93% of them."""
        y, yhat, _ = _job(2026, 2000)
        truth = y.mean()
        pi = inclusion_probabilities(yhat, 150)
        uniforms = np.random.default_rng(99).random((1000, y.size))
        covered = 0
        widths = []
        for row in uniforms:
            drawn = row < pi
            result = active_mean(yhat=yhat, y=np.where(drawn, y, np.nan), drawn=drawn, pi=pi)
            assert result["ci"] is not None
            covered += result["ci"][0] <= truth <= result["ci"][1]
            widths.append(result["ci"][1] - result["ci"][0])
        assert covered / 1000 >= 0.93
        # and the planner's expected half-width is what the draws gave
        planned = active_half_width(budget=150, yhat_all=yhat, y=y, yhat=yhat)
        assert np.mean(widths) / 2 == pytest.approx(planned, rel=0.1)


# -- stratified PPI ----------------------------------------------------------------------------------------------------


def _uniform_strata(y, yhat, family, labelled):
    return [
        (f"p{k}", y[labelled & (family == k)], yhat[labelled & (family == k)], yhat[~labelled & (family == k)])
        for k in sorted(set(family.tolist()))
    ]


class TestStratifiedPpi:
    def test_it_combines_ppi_pys_per_stratum_estimates_by_share(self, ppi_py):
        y, yhat, family = _job(8, 600)
        labelled = np.random.default_rng(8).random(600) < 0.2
        strata = _uniform_strata(y, yhat, family, labelled)
        result = stratified_ppi(strata)
        theta, variance = 0.0, 0.0
        for stratum, (_, ys, yhats, unlabelled) in zip(result["strata"], strata, strict=True):
            estimate = float(np.squeeze(ppi_py.ppi_mean_pointestimate(ys, yhats, unlabelled, lam=None)))
            low, high = (float(np.squeeze(x)) for x in ppi_py.ppi_mean_ci(ys, yhats, unlabelled, alpha=0.05, lam=None))
            weight = (len(ys) + len(unlabelled)) / 600
            assert stratum["rate"] == pytest.approx(estimate)
            assert stratum["ci"] == pytest.approx([low, high])
            assert (stratum["n"], stratum["N"], stratum["weight"]) == (len(ys), len(ys) + len(unlabelled), weight)
            theta += weight * estimate
            variance += weight**2 * ((high - low) / (2 * Z)) ** 2
        assert result["rate"] == pytest.approx(theta)
        assert result["ci"] == pytest.approx([theta - Z * math.sqrt(variance), theta + Z * math.sqrt(variance)])

    def test_a_stratum_without_two_labels_leaves_it_undefined(self):
        strata = [("he", [0.2], [0.3], [0.1, 0.4]), ("xe", [0.2, 0.6], [0.3, 0.5], [0.1, 0.4])]
        result = stratified_ppi(strata)
        assert result["rate"] is None and result["ci"] is None
        assert result["strata"][1]["rate"] is not None

    def test_1000_uniform_pools_cover_the_known_rate(self):
        """1,000 uniform pools of 200 of 2,000 contexts: the stratified interval covers the job's rate in at least
        93% of them."""
        y, yhat, family = _job(2027, 2000)
        truth = y.mean()
        rng = np.random.default_rng(5)
        covered = 0
        for _ in range(1000):
            labelled = np.zeros(y.size, dtype=bool)
            labelled[rng.choice(y.size, size=200, replace=False)] = True
            result = stratified_ppi(_uniform_strata(y, yhat, family, labelled))
            assert result["ci"] is not None
            covered += result["ci"][0] <= truth <= result["ci"][1]
        assert covered / 1000 >= 0.93


# -- the budget planner ------------------------------------------------------------------------------------------------


class TestBudget:
    def test_lambda_is_ppi_pys(self, ppi_py):
        y, yhat, _ = _job(12, 300)
        labelled = np.arange(300) < 60
        ys, yhats, unlabelled = y[labelled], yhat[labelled], yhat[~labelled]
        theta = unlabelled.mean() + (ys - yhats).mean()  # ppi_py centres its gradients on the lam = 1 estimate
        expected = ppi_py.ppi._calc_lam_glm(ys - theta, yhats - theta, unlabelled - theta, np.eye(1), clip=True)
        assert ppi_lambda(y=ys, yhat=yhats, yhat_unlabelled=unlabelled) == pytest.approx(float(expected))

    @pytest.mark.parametrize("half_width", [0.02, 0.05, 0.10])
    def test_people_alone_need_ceil_z_s_over_h_squared(self, half_width):
        y, _, _ = _job(13, 80)
        assert people_n(y=y, half_width=half_width) == math.ceil((Z * y.std(ddof=1) / half_width) ** 2)
        assert people_n(y=np.zeros(8), half_width=half_width) == 0  # a pilot without spread: the formula's 0

    @pytest.mark.parametrize("half_width", [0.02, 0.05, 0.10])
    def test_ppi_n_is_the_smallest_n_whose_planned_half_width_reaches_h(self, half_width):
        y, yhat, _ = _job(14, 3000)
        ys, yhats, unlabelled = y[:100], yhat[:100], yhat[100:]
        lam = ppi_lambda(y=ys, yhat=yhats, yhat_unlabelled=unlabelled)

        def planned(n):
            return Z * math.sqrt(np.var(ys - lam * yhats, ddof=1) / n + lam**2 * np.var(unlabelled, ddof=1) / 2900)

        n = ppi_n(y=ys, yhat=yhats, yhat_unlabelled=unlabelled, half_width=half_width)
        assert isinstance(n, int)
        assert planned(n) <= half_width < planned(n - 1) if n > 1 else planned(n) <= half_width

    def test_ppi_n_is_unreachable_when_the_judges_share_alone_is_too_wide(self):
        y, yhat, _ = _job(15, 60)
        ys, yhats, unlabelled = y[:40], yhat[:40], yhat[40:]
        lam = ppi_lambda(y=ys, yhat=yhats, yhat_unlabelled=unlabelled)
        floor = Z * math.sqrt(lam**2 * np.var(unlabelled, ddof=1) / 20)
        assert floor > 0.02
        assert ppi_n(y=ys, yhat=yhats, yhat_unlabelled=unlabelled, half_width=0.02) == UNREACHABLE

    def test_active_half_width_at_every_context_is_people_on_all(self):
        y, yhat, _ = _job(16, 500)
        assert active_half_width(budget=500, yhat_all=yhat, y=y[:80], yhat=yhat[:80]) == pytest.approx(
            Z * y[:80].std(ddof=1) / math.sqrt(500)
        )

    def test_active_half_width_follows_the_expected_variance_of_z(self):
        """(var(Y) + mean r^2 (1/pi - 1)) / N from the pilot, pi the job's at that budget."""
        y, yhat, _ = _job(17, 500)
        pi = inclusion_probabilities(yhat, 90)
        pilot = np.arange(500) % 5 == 0
        expected = Z * math.sqrt(
            (y[pilot].var(ddof=1) + ((y[pilot] - yhat[pilot]) ** 2 * (1 / pi[pilot] - 1)).mean()) / 500
        )
        assert active_half_width(budget=90, yhat_all=yhat, y=y[pilot], yhat=yhat[pilot]) == pytest.approx(expected)

    @pytest.mark.parametrize("half_width", [0.02, 0.05, 0.10])
    def test_active_n_is_the_smallest_budget_that_reaches_h(self, half_width):
        y, yhat, _ = _job(18, 1500)
        pilot = slice(0, 120)

        def width(budget):
            return active_half_width(budget=budget, yhat_all=yhat, y=y[pilot], yhat=yhat[pilot])

        n = active_n(yhat_all=yhat, y=y[pilot], yhat=yhat[pilot], half_width=half_width)
        if width(1500) > half_width:
            assert n == UNREACHABLE
        else:
            assert isinstance(n, int)
            assert width(n) <= half_width
            assert n == 1 or width(n - 1) > half_width
