"""Each metric against an independent computation: scikit-learn, scipy, statsmodels, krippendorff, or by hand."""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score, matthews_corrcoef
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from analysis.metrics import (
    beta_moments,
    binary_agreement,
    cohen_kappa,
    disagreement_probability,
    krippendorff_alpha,
    mcc,
    raw_agreement,
    repetition_rate,
    variation_shares,
)

A = [1, 1, 0, 0, 1, 0, 1, 1]
B = [1, 0, 0, 1, 1, 0, 1, 1]


class TestRawAgreement:
    def test_it_is_the_share_of_equal_positions_with_scipy_sem(self):
        result = raw_agreement(A, B)
        agree = np.array([1, 0, 1, 0, 1, 1, 1, 1], dtype=float)
        assert result["n"] == 8
        assert result["agreement"] == pytest.approx(6 / 8)
        assert result["sem"] == pytest.approx(stats.sem(agree))

    def test_it_is_undefined_without_items_and_has_no_sem_for_one(self):
        assert raw_agreement([], []) == {"n": 0, "agreement": None, "sem": None}
        assert raw_agreement([1], [1]) == {"n": 1, "agreement": 1.0, "sem": None}


class TestCohenKappa:
    def test_it_matches_scikit_learn_on_binary_ratings(self):
        result = cohen_kappa(A, B, categories=[0, 1])
        assert result["kappa"] == pytest.approx(cohen_kappa_score(A, B))

    def test_it_matches_a_hand_worked_table(self):
        # first = [1, 0, 0, 1], second = [1, 1, 0, 1]: p_o = 3/4, p_e = 1/2 * 3/4 + 1/2 * 1/4 = 1/2, kappa = 1/2.
        result = cohen_kappa([1, 0, 0, 1], [1, 1, 0, 1], categories=[0, 1])
        assert result["kappa"] == pytest.approx(0.5)

    def test_its_interval_is_statsmodels_on_the_contingency_table(self):
        table = np.array([[2, 1], [1, 4]])  # rows A (0, 1), columns B (0, 1), counted by hand from A and B
        expected = sm_cohens_kappa(table)
        result = cohen_kappa(A, B, categories=[0, 1])
        assert result["kappa"] == pytest.approx(expected.kappa)
        assert result["kappa_ci"] == pytest.approx([expected.kappa_low, expected.kappa_upp])

    def test_every_tables_figures_are_statsmodels_own_floats(self):
        """The kappa and its interval are statsmodels' `cohens_kappa` figures bit for bit, on square and one-sided
        tables, constant sides and perfect agreement among them."""
        from analysis.metrics import agreement

        rng = np.random.default_rng(11)
        tables = [np.array([[5.0, 0.0], [0.0, 0.0]]), np.array([[3.0, 0.0], [0.0, 4.0]]), np.array([[2.0, 3.0]])]
        for _ in range(400):
            k = int(rng.integers(1, 5))
            table = rng.integers(0, int(rng.integers(1, 40)), (k, k)).astype(float)
            if rng.random() < 0.2:
                table[:, 1:] = 0  # one side constant
            tables.append(table)
        for table in tables:
            if table.sum() == 0:
                continue
            with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                result = sm_cohens_kappa(table)
            expected = tuple(agreement.finite(x) for x in (result.kappa, result.kappa_low, result.kappa_upp))
            agreement._kappa_of_table.cache_clear()
            assert agreement._statsmodels_kappa(table) == expected, table

    def test_it_matches_scikit_learn_on_three_labels(self):
        a = ["correct", "misgendering", "no_pronoun", "correct", "correct", "misgendering"]
        b = ["correct", "correct", "no_pronoun", "correct", "no_pronoun", "misgendering"]
        result = cohen_kappa(a, b, categories=["correct", "misgendering", "no_pronoun"])
        assert result["kappa"] == pytest.approx(cohen_kappa_score(a, b))

    def test_it_is_undefined_when_both_raters_give_one_and_the_same_label(self):
        assert cohen_kappa([1, 1, 1], [1, 1, 1], categories=[0, 1]) == {"kappa": None, "kappa_ci": None}

    def test_it_is_undefined_without_items(self):
        assert cohen_kappa([], [], categories=[0, 1]) == {"kappa": None, "kappa_ci": None}


class TestMcc:
    def test_it_matches_scikit_learn_and_the_fisher_z_interval(self):
        result = mcc(A, B)
        r = matthews_corrcoef(A, B)
        assert result["mcc"] == pytest.approx(r)
        z, se = math.atanh(r), 1 / math.sqrt(len(A) - 3)
        q = stats.norm.ppf(0.975)
        assert result["mcc_ci"] == pytest.approx([math.tanh(z - q * se), math.tanh(z + q * se)])

    @pytest.mark.parametrize("a, b", [([1, 0, 1], [1, 0, 0]), ([1, 0, 1], [0, 1, 0]), ([1, 0], [1, 0])])
    def test_with_three_items_or_fewer_the_interval_is_scipys_unbounded_one(self, a, b):
        expected = stats.pearsonr(a, b)
        interval = expected.confidence_interval()
        assert mcc(a, b) == {
            "mcc": pytest.approx(expected.statistic),
            "mcc_ci": pytest.approx([interval.low, interval.high]),
        }
        assert mcc(a, b)["mcc_ci"] == pytest.approx([-1.0, 1.0])

    @pytest.mark.parametrize("a, b", [([1, 1, 1, 1, 1], [1, 0, 1, 0, 1]), ([1, 0, 1, 0, 1], [0, 0, 0, 0, 0])])
    def test_it_is_undefined_not_zero_when_one_side_is_constant(self, a, b):
        assert mcc(a, b) == {"mcc": None, "mcc_ci": None}

    def test_the_combined_figures_leave_mcc_undefined_on_a_constant_side_but_give_kappa_zero(self):
        result = binary_agreement([1, 1, 1, 1], [1, 0, 1, 1])
        assert result["mcc"] is None and result["mcc_ci"] is None
        assert result["kappa"] == 0.0
        assert result["agreement"] == pytest.approx(0.75)
        assert result["agreement_sem"] == pytest.approx(stats.sem([1, 0, 1, 1]))


class TestKappaEdgeCases:
    """docs/domain.md, 'Metrics': kappa is 0 when exactly one side is constant, None only when p_e = 1."""

    def test_it_is_zero_with_the_papers_interval_when_one_side_is_constant(self):
        # 750 instances all right on the probability side, 130 first samples misgendering: the paper's table 4 cell
        # reads 0.000 +- 0.185. statsmodels on the table of observed categories (as pandas.crosstab builds it).
        m_prob, m_gen = [1] * 750, [1] * 620 + [0] * 130
        expected = sm_cohens_kappa(pd.crosstab(np.array(m_prob), np.array(m_gen)).to_numpy())
        result = cohen_kappa(m_prob, m_gen, categories=[0, 1])
        assert result["kappa"] == 0.0
        assert result["kappa_ci"] == pytest.approx([expected.kappa_low, expected.kappa_upp])
        assert (result["kappa_ci"][1] - result["kappa_ci"][0]) / 2 == pytest.approx(0.185, abs=5e-4)

    def test_it_is_zero_when_the_other_side_is_constant(self):
        a, b = [1, 0, 1, 0, 0], [0, 0, 0, 0, 0]
        expected = sm_cohens_kappa(pd.crosstab(np.array(a), np.array(b)).to_numpy())
        result = cohen_kappa(a, b, categories=[0, 1])
        assert result["kappa"] == 0.0
        assert result["kappa_ci"] == pytest.approx([expected.kappa_low, expected.kappa_upp])
        # sklearn agrees on the point estimate: p_e = p_o.
        assert cohen_kappa_score(a, b) == pytest.approx(0.0)

    def test_it_is_zero_for_a_constant_rater_among_three_labels(self):
        a = ["correct"] * 4
        b = ["correct", "misgendering", "no_pronoun", "correct"]
        result = cohen_kappa(a, b, categories=["correct", "misgendering", "no_pronoun"])
        assert result["kappa"] == 0.0 and cohen_kappa_score(a, b) == pytest.approx(0.0)

    def test_it_is_undefined_when_both_sides_are_the_same_constant(self):
        assert cohen_kappa([0, 0, 0], [0, 0, 0], categories=[0, 1]) == {"kappa": None, "kappa_ci": None}

    def test_it_is_zero_without_an_interval_when_both_sides_are_different_constants(self):
        # p_o = 0 and p_e = 1 * 0 + 0 * 1 = 0: kappa = 0; statsmodels' variance is 0, so no interval.
        assert cohen_kappa([1, 1, 1], [0, 0, 0], categories=[0, 1]) == {"kappa": 0.0, "kappa_ci": None}

    def test_it_handles_a_single_item(self):
        assert cohen_kappa([1], [1], categories=[0, 1]) == {"kappa": None, "kappa_ci": None}
        assert cohen_kappa([1], [0], categories=[0, 1]) == {"kappa": 0.0, "kappa_ci": None}
        assert mcc([1], [0]) == {"mcc": None, "mcc_ci": None}
        assert raw_agreement([1], [0]) == {"n": 1, "agreement": 0.0, "sem": None}

    def test_a_zero_width_interval_is_undefined_not_a_point(self):
        # Perfect agreement over both classes: kappa 1, statsmodels gives [1, 1].
        expected = sm_cohens_kappa(np.array([[2, 0], [0, 3]]))
        assert expected.kappa_low == pytest.approx(expected.kappa_upp)
        assert cohen_kappa([0, 0, 1, 1, 1], [0, 0, 1, 1, 1], categories=[0, 1]) == {"kappa": 1.0, "kappa_ci": None}


class TestKrippendorff:
    def test_it_matches_the_package_on_a_hand_built_reliability_matrix(self):
        a = ["correct", "misgendering", "no_pronoun", "correct", "correct"]
        b = ["correct", "correct", "no_pronoun", "correct", "misgendering"]
        # coded by hand: correct = 0, misgendering = 1, no_pronoun = 2
        matrix = np.array([[0, 1, 2, 0, 0], [0, 0, 2, 0, 1]], dtype=float)
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
        assert krippendorff_alpha(a, b) == pytest.approx(expected)

    def test_it_matches_a_hand_worked_binary_case(self):
        # pairable values: 1,1 | 0,1 | 0,0 | 1,1 -> coincidences o00 = 2, o01 = o10 = 1, o11 = 4; n = 8, n0 = 3, n1 = 5.
        # D_o = 2 / 8, D_e = 2 * 3 * 5 / (8 * 7); alpha = 1 - D_o / D_e = 1 - (1/4) / (15/28) = 1 - 7/15 = 8/15.
        assert krippendorff_alpha([1, 0, 0, 1], [1, 1, 0, 1]) == pytest.approx(8 / 15)

    def test_it_is_undefined_with_one_value_or_no_items(self):
        assert krippendorff_alpha(["correct"] * 3, ["correct"] * 3) is None
        assert krippendorff_alpha([], []) is None


class TestBeta:
    def test_disagreement_probability_follows_equation_8(self):
        d = disagreement_probability(np.array([1, 0, 1]), np.array([0.8, 0.4, 1.0]))
        assert d == pytest.approx([0.2, 0.4, 0.0])

    def test_it_is_the_method_of_moments_with_sample_variance(self):
        d = np.array([0.0, 0.2, 0.4, 0.2, 0.6, 0.0])
        mean = sum(d) / 6
        var = sum((x - mean) ** 2 for x in d) / 5
        c = mean * (1 - mean) / var - 1
        result = beta_moments(d)
        assert result["n"] == 6
        assert result["alpha"] == pytest.approx(mean * c)
        assert result["beta"] == pytest.approx((1 - mean) * c)

    def test_it_is_undefined_with_zero_variance_or_a_single_value(self):
        assert beta_moments(np.array([0.2, 0.2, 0.2]))["alpha"] is None
        assert beta_moments(np.array([0.2, 0.2, 0.2]))["beta"] is None
        assert beta_moments(np.array([0.3]))["alpha"] is None

    def test_it_is_undefined_when_the_variance_is_too_large_for_any_beta(self):
        # mean 1/2, sample variance 1/2 > mean (1 - mean): c = -1/2
        result = beta_moments(np.array([0.0, 1.0]))
        assert result["alpha"] is None and result["beta"] is None


class TestRepetition:
    def test_it_is_the_geometric_mean_of_non_singleton_ngram_rates(self):
        # a b a b a b: 1-grams {a:3, b:3} -> 1; 2-grams {ab:3, ba:2} -> 1; 3-grams {aba:2, bab:2} -> 1;
        # 4-grams {abab:2, baba:1} -> 1/2; RR = (1/2) ** (1/4)
        assert repetition_rate("a b a b a b".split()) == pytest.approx(0.5**0.25)

    def test_it_lower_cases_tokens(self):
        assert repetition_rate("A b a B a b".split()) == pytest.approx(0.5**0.25)

    def test_it_is_zero_without_a_repeated_four_gram(self):
        assert repetition_rate("the cat the cat sat".split()) == 0.0

    def test_it_is_undefined_below_four_tokens(self):
        assert repetition_rate(["ok", "."]) is None


class TestVariation:
    def test_it_shares_instances_by_population_std_of_their_samples(self):
        samples = [[1, 1, 1, 1, 1], [0, 1, 1, 1, 1], [0, 0, 1, 1, 0], [1, 0, 0, 0, 0]]
        stds = [round(float(np.std(s)), 2) for s in samples]  # 0.0, 0.4, 0.49, 0.4
        shares = variation_shares(np.array([sum(s) for s in samples]), np.array([5, 5, 5, 5]))
        assert shares == {"0.00": stds.count(0.0) / 4, "0.40": stds.count(0.4) / 4, "0.49": stds.count(0.49) / 4}
