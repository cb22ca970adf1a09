"""The multi-rater statistics of docs/domain.md, 'Multi-rater statistics', against independent libraries: Cohen's
kappa on the square table (scikit-learn, statsmodels), Fleiss' kappa with unequal rater counts (irrCAC, statsmodels),
Gwet's AC1 (irrCAC) and the bootstrap intervals (scipy.stats.bootstrap)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from irrCAC.raw import CAC
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from analysis.metrics.agreement import (
    BOOTSTRAP_DRAWS,
    BOOTSTRAP_SEED,
    binary_agreement,
    bootstrap_ci,
    bootstrap_ratio_ci,
    cohen_kappa_square,
)
from analysis.metrics.multirater import fleiss_kappa, gwet_ac1

C, M, N = "correct", "misgendering", "no_pronoun"
LABELS = [C, M, N]

# Unequal rater counts: two, three and four ratings per item, and one item with a single rating (left out).
UNEQUAL = [
    [C, C, M],
    [M, M],
    [C, N, M, C],
    [N, N, N],
    [C, M],
    [C, C],
    [M, C, C],
    [C],
]
# One label dominates and people agree on it: kappa near 0, AC1 high (the "paradox" AC1 was made for).
DOMINANT = [[C, C]] * 46 + [[C, M], [M, C], [C, N], [N, C]]


def _frame(items: list[list]) -> pd.DataFrame:
    """Items x rater slots with NaN where an item has fewer ratings (irrCAC's input)."""
    width = max(len(item) for item in items)
    return pd.DataFrame([item + [np.nan] * (width - len(item)) for item in items if len(item) >= 2])


class TestCohenKappaSquare:
    def test_it_is_scikit_learn_on_the_whole_label_set_with_statsmodels_interval_clipped(self):
        a = [C, C, M, C, N, C, M, C, C, C]
        b = [C, M, M, C, C, C, M, C, C, N]
        result = cohen_kappa_square(a, b, categories=LABELS)
        assert result["kappa_square"] == pytest.approx(cohen_kappa_score(a, b, labels=LABELS))
        table = pd.crosstab(pd.Categorical(a, LABELS), pd.Categorical(b, LABELS), dropna=False).to_numpy()
        expected = sm_cohens_kappa(table)
        assert result["kappa_square_ci"] == pytest.approx([max(expected.kappa_low, -1), min(expected.kappa_upp, 1)])

    @pytest.mark.parametrize("seed", range(8))
    def test_it_equals_scikit_learn_on_random_ratings_and_is_null_where_scikit_learn_is_undefined(self, seed):
        rng = np.random.default_rng(seed)
        for n in range(1, 25):
            # Few labels and skewed odds, so that constant sides and p_e = 1 occur too.
            a = list(rng.choice(LABELS, size=n, p=[0.8, 0.15, 0.05]))
            b = list(rng.choice(LABELS[: 1 + seed % 3], size=n))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = cohen_kappa_score(a, b, labels=LABELS)
            got = cohen_kappa_square(a, b, categories=LABELS)["kappa_square"]
            if np.isnan(expected):
                assert got is None, (a, b)
            else:
                assert got == pytest.approx(expected, abs=1e-12), (a, b)

    def test_an_unused_label_changes_the_table_not_the_value(self):
        a, b = [C, C, M, C], [C, M, M, C]
        assert cohen_kappa_square(a, b, categories=LABELS)["kappa_square"] == pytest.approx(
            cohen_kappa_score(a, b, labels=LABELS)
        )

    def test_its_interval_never_leaves_minus_one_to_one(self):
        # nearly perfect agreement on few items: statsmodels' upper bound passes 1
        a = [1, 1, 1, 0, 0, 1]
        b = [1, 1, 1, 0, 1, 1]
        table = np.array([[1, 1], [0, 4]])
        assert sm_cohens_kappa(table).kappa_upp > 1
        low, high = cohen_kappa_square(a, b, categories=[0, 1])["kappa_square_ci"]
        assert high == 1.0
        assert low == pytest.approx(sm_cohens_kappa(table).kappa_low)

    def test_one_constant_side_gives_zero_without_an_interval(self):
        result = cohen_kappa_square([1, 1, 1, 1], [1, 0, 1, 1], categories=[0, 1])
        assert result["kappa_square"] == pytest.approx(0)
        assert result["kappa_square_ci"] is None

    def test_both_sides_the_same_constant_is_undefined(self):
        assert cohen_kappa_square([1, 1], [1, 1], categories=[0, 1]) == {"kappa_square": None, "kappa_square_ci": None}

    def test_each_table_is_computed_once(self, monkeypatch):
        from analysis.metrics import agreement

        asked = []
        simple_kappa = agreement._simple_kappa
        monkeypatch.setattr(
            agreement, "_simple_kappa", lambda table: asked.append(table.tolist()) or simple_kappa(table)
        )
        agreement._kappa_of_table.cache_clear()
        a, b = [C, C, M, C, N, C], [C, M, M, C, C, N]
        first = cohen_kappa_square(a, b, categories=LABELS)
        assert cohen_kappa_square(list(a), list(b), categories=LABELS) == first
        assert len(asked) == 1
        swapped = cohen_kappa_square(b, a, categories=LABELS)  # the transposed table: asked again, its own figures
        assert len(asked) == 2 and asked[1] == np.array(asked[0]).T.tolist()
        assert swapped["kappa_square"] == pytest.approx(first["kappa_square"])  # kappa is symmetric, its table is not
        assert cohen_kappa_square(a[:4], b[:4], categories=LABELS)["kappa_square"] != first["kappa_square"]
        assert len(asked) == 3

    def test_prob_vs_gen_keeps_the_papers_kappa_beside_the_square_one(self):
        # one side constant: the paper's one-sided table gives 0 with an interval, the square table 0 without
        m_prob, m_gen = [1] * 10, [1, 1, 1, 0, 1, 1, 1, 1, 0, 1]
        row = binary_agreement(m_prob, m_gen)
        assert row["kappa"] == 0 and row["kappa_ci"] is not None
        assert row["kappa_square"] == pytest.approx(0) and row["kappa_square_ci"] is None


class TestFleissKappa:
    def test_it_takes_each_items_own_number_of_raters(self):
        expected = CAC(_frame(UNEQUAL), categories=LABELS).fleiss()["est"]["coefficient_value"]
        result = fleiss_kappa(UNEQUAL, categories=LABELS)
        assert result["fleiss_n_items"] == 7
        assert result["fleiss_kappa"] == pytest.approx(expected, abs=1e-5)

    def test_it_matches_a_hand_worked_table(self):
        # items [a a], [a b b]: P_1 = 1, P_2 = 2/6; p_a = (1 + 1/3)/2 = 2/3, p_b = 1/3; P_e = 5/9
        # kappa = (2/3 - 5/9) / (1 - 5/9) = 1/4
        assert fleiss_kappa([["a", "a"], ["a", "b", "b"]])["fleiss_kappa"] == pytest.approx(0.25)

    def test_one_more_rating_does_not_make_it_undefined(self):
        equal = [[C, C], [C, M], [M, M]]
        assert fleiss_kappa(equal)["fleiss_kappa"] is not None
        assert fleiss_kappa([*equal[:2], [M, M, C]])["fleiss_kappa"] is not None


class TestGwetAc1:
    def test_it_is_irrcacs_value_and_interval_with_unequal_rater_counts(self):
        expected = CAC(_frame(UNEQUAL), categories=LABELS).gwet()["est"]
        result = gwet_ac1(UNEQUAL, categories=LABELS)
        assert result["gwet_ac1"] == pytest.approx(expected["coefficient_value"], abs=1e-5)
        low, high = expected["confidence_interval"]
        assert result["gwet_ac1_ci"] == pytest.approx([max(low, -1), min(high, 1)], abs=1e-5)

    def test_it_stays_high_where_one_label_dominates_and_kappa_falls_to_zero(self):
        expected = CAC(_frame(DOMINANT), categories=LABELS).gwet()["est"]["coefficient_value"]
        result = gwet_ac1(DOMINANT, categories=LABELS)
        assert result["gwet_ac1"] == pytest.approx(expected, abs=1e-5)
        assert result["gwet_ac1"] > 0.9
        first, second = [item[0] for item in DOMINANT], [item[1] for item in DOMINANT]
        kappa = cohen_kappa_square(first, second, categories=LABELS)["kappa_square"]
        assert kappa == pytest.approx(cohen_kappa_score(first, second, labels=LABELS))
        assert abs(kappa) < 0.05
        assert abs(fleiss_kappa(DOMINANT, categories=LABELS)["fleiss_kappa"]) < 0.05

    def test_it_is_undefined_without_an_item_rated_twice(self):
        assert gwet_ac1([[C], [M]], categories=LABELS) == {"gwet_ac1": None, "gwet_ac1_ci": None}


class TestBootstrap:
    def test_it_is_scipys_percentile_interval_with_the_same_seed(self):
        values = np.array([1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1], dtype=float)
        expected = stats.bootstrap(
            (values,),
            np.mean,
            n_resamples=BOOTSTRAP_DRAWS,
            method="percentile",
            rng=np.random.default_rng(BOOTSTRAP_SEED),
        ).confidence_interval
        assert bootstrap_ci(values) == pytest.approx([expected.low, expected.high])
        assert BOOTSTRAP_DRAWS == 2000

    def test_the_ratio_interval_resamples_items_with_all_their_samples(self):
        correct, samples = np.array([5, 3, 0, 4, 5, 2, 1]), np.array([5, 5, 5, 5, 5, 5, 4])
        expected = stats.bootstrap(
            (correct, samples),
            lambda c, s, axis: c.sum(axis=axis) / s.sum(axis=axis),
            paired=True,
            vectorized=True,
            n_resamples=BOOTSTRAP_DRAWS,
            method="percentile",
            rng=np.random.default_rng(BOOTSTRAP_SEED),
        ).confidence_interval
        assert bootstrap_ratio_ci(correct, samples) == pytest.approx([expected.low, expected.high])

    def test_it_is_the_same_every_time_and_undefined_below_two_items(self):
        values = [1, 0, 1, 1]
        assert bootstrap_ci(values) == bootstrap_ci(values)
        assert bootstrap_ci([1]) is None
        assert bootstrap_ci([1, 1, 1]) == [1.0, 1.0]

    def test_prob_vs_gen_rows_carry_it_beside_the_sem(self):
        a, b = [1, 0, 1, 1, 0, 1], [1, 1, 1, 0, 0, 1]
        agree = (np.array(a) == np.array(b)).astype(float)
        row = binary_agreement(a, b)
        assert row["agreement_boot_ci"] == pytest.approx(bootstrap_ci(agree))
        assert row["agreement_boot_ci"][0] <= row["agreement"] <= row["agreement_boot_ci"][1]
