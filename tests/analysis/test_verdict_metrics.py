"""The judge's verdict (docs/domain.md, 'The judge's verdict') against independent computations: scikit-learn,
statsmodels and irrCAC for chance-corrected agreement, scipy.stats.bootstrap for its intervals, the reference
procedure of the Alternative Annotator Test written out here, a brute-force binomial search for the selective
threshold, and ppi_py 0.2.3 for the prediction-powered rates."""

from __future__ import annotations

import math
import random
import sys
import types
import warnings

import numpy as np
import pandas as pd
import pytest
from irrCAC.raw import CAC
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from analysis.metrics.agreement import BOOTSTRAP_DRAWS, BOOTSTRAP_SEED
from analysis.metrics.verdict import (
    alt_test,
    alt_test_omega_by_epsilon,
    chance_corrected,
    coverage_at,
    human_label,
    per_class_kappa,
    ppi_mean,
    scott_pi,
    selective_threshold,
)

C, M, N = "correct", "misgendering", "no_pronoun"
LABELS = [C, M, N]

A = [C, C, M, C, N, C, M, C, C, C, M, C, N, N, C, C, M, C, C, C]
B = [C, M, M, C, C, C, M, C, C, N, M, C, N, C, C, C, M, M, C, C]


class TestHumanLabel:
    def test_it_is_the_adjudicated_label_when_there_is_one(self):
        assert human_label(adjudicated=M, labels=[C, C, M]) == M

    def test_it_is_the_label_given_most_often_otherwise(self):
        assert human_label(adjudicated=None, labels=[C, M, C]) == C
        assert human_label(adjudicated=None, labels=[N, C, M, C]) == C
        assert human_label(adjudicated=None, labels=[M]) == M

    def test_a_blank_adjudication_is_none(self):
        assert human_label(adjudicated="", labels=[M, M, C]) == M

    def test_a_tie_for_first_has_no_label(self):
        assert human_label(adjudicated=None, labels=[C, M]) is None
        assert human_label(adjudicated=None, labels=[C, M, M, C, N]) is None
        assert human_label(adjudicated=None, labels=[]) is None


def _fleiss(a: list, b: list) -> float:
    """Fleiss' kappa of two raters, which is Scott's pi (statsmodels)."""
    table, _ = aggregate_raters(np.array([a, b], dtype=object).T)
    return float(sm_fleiss_kappa(table, method="fleiss"))


def _irrcac_ac1(a: list, b: list) -> float:
    frame = pd.DataFrame({"first": a, "second": b})
    return float(CAC(frame, categories=LABELS).gwet()["est"]["coefficient_value"])


class TestScottPi:
    def test_it_pools_both_raters_for_chance_agreement(self):
        # Hand-worked: p_o = 1/2 and pooled shares C 4/8, M 4/8, so p_e = 1/2 and pi = 0; then p_o = 3/4 with
        # pooled shares C 5/8, M 3/8.
        assert scott_pi([C, C, M, M], [C, M, M, C], categories=LABELS) == pytest.approx(0.0)
        p_e = (5 / 8) ** 2 + (3 / 8) ** 2
        assert scott_pi([C, C, M, M], [C, C, M, C], categories=LABELS) == pytest.approx((3 / 4 - p_e) / (1 - p_e))

    def test_it_is_fleiss_kappa_of_two_raters(self):
        assert scott_pi(A, B, categories=LABELS) == pytest.approx(_fleiss(A, B))

    def test_it_is_undefined_with_no_items_or_one_label_throughout(self):
        assert scott_pi([], [], categories=LABELS) is None
        assert scott_pi([C, C], [C, C], categories=LABELS) is None


class TestPerClassKappa:
    def test_each_label_is_binary_cohen_kappa_against_the_rest(self):
        result = per_class_kappa(A, B, categories=LABELS)
        assert list(result) == LABELS
        for label in LABELS:
            expected = cohen_kappa_score([x == label for x in A], [y == label for y in B])
            assert result[label] == pytest.approx(expected)

    def test_a_label_nobody_gave_has_no_kappa(self):
        assert per_class_kappa([C, M], [C, M], categories=LABELS)[N] is None


class TestChanceCorrected:
    def test_its_figures_are_scikit_learn_statsmodels_and_irrcac(self):
        result = chance_corrected(A, B, categories=LABELS)
        assert result["n"] == len(A)
        assert result["cohen_kappa"] == pytest.approx(cohen_kappa_score(A, B, labels=LABELS))
        assert result["scott_pi"] == pytest.approx(_fleiss(A, B))
        assert result["gwet_ac1"] == pytest.approx(_irrcac_ac1(A, B), abs=1e-5)
        assert result["per_class_kappa"] == per_class_kappa(A, B, categories=LABELS)

    def test_its_intervals_are_scipys_percentile_bootstrap_of_the_items_in_the_given_order(self):
        draws = 200
        result = chance_corrected(A, B, categories=LABELS, draws=draws, seed=7)
        statistics = {
            "cohen_kappa_boot_ci": lambda a, b: cohen_kappa_score(a, b, labels=LABELS),
            "scott_pi_boot_ci": lambda a, b: _fleiss(list(a), list(b)),
            "gwet_ac1_boot_ci": lambda a, b: _irrcac_ac1(list(a), list(b)),
        }
        for key, statistic in statistics.items():
            expected = stats.bootstrap(
                (np.array(A, dtype=object), np.array(B, dtype=object)),
                statistic,
                paired=True,
                vectorized=False,
                n_resamples=draws,
                method="percentile",
                rng=np.random.default_rng(7),
            ).confidence_interval
            assert result[key] == pytest.approx([expected.low, expected.high], abs=1e-5), key

    def test_each_per_class_kappa_has_scipys_percentile_bootstrap_interval_of_its_one_vs_rest_kappa(self):
        draws, a, b = 200, A * 3, B * 3  # 60 items: every label in every resample
        result = chance_corrected(a, b, categories=LABELS, draws=draws, seed=11)
        assert set(result["per_class_kappa_boot_ci"]) == set(result["per_class_kappa"]) == set(LABELS)
        for label in LABELS:
            expected = stats.bootstrap(
                (np.array(a, dtype=object), np.array(b, dtype=object)),
                lambda x, y, label=label: cohen_kappa_score(
                    [value == label for value in x], [value == label for value in y], labels=[False, True]
                ),
                paired=True, vectorized=False, n_resamples=draws, method="percentile", rng=np.random.default_rng(11),
            ).confidence_interval  # fmt: skip
            assert np.isfinite([expected.low, expected.high]).all(), label  # defined in every resample: comparable
            assert result["per_class_kappa_boot_ci"][label] == pytest.approx([expected.low, expected.high], abs=1e-9)
        one = chance_corrected([C], [M], categories=LABELS)
        assert one["per_class_kappa_boot_ci"] == {label: None for label in LABELS}

    def test_it_draws_the_reports_2000_resamples_from_the_reports_seed_by_default(self):
        assert chance_corrected(A, B, categories=LABELS) == chance_corrected(
            A, B, categories=LABELS, seed=BOOTSTRAP_SEED, draws=BOOTSTRAP_DRAWS
        )
        assert BOOTSTRAP_DRAWS == 2000

    def test_too_few_items_give_none_never_nan(self):
        empty = chance_corrected([], [], categories=LABELS)
        assert empty["n"] == 0
        assert [empty[key] for key in ("cohen_kappa", "scott_pi", "gwet_ac1", "cohen_kappa_boot_ci")] == [None] * 4
        one = chance_corrected([C], [M], categories=LABELS)
        assert (
            one["cohen_kappa_boot_ci"] is None and one["scott_pi_boot_ci"] is None and one["gwet_ac1_boot_ci"] is None
        )
        constant = chance_corrected([C] * 5, [C] * 5, categories=LABELS)
        assert (
            constant["cohen_kappa"] is None and constant["scott_pi"] is None and constant["cohen_kappa_boot_ci"] is None
        )

    def test_an_interval_of_zero_width_is_none_shown_as_undefined_not_rounding_noise(self):
        # One rater constant: kappa is 0 in every resample (p_o = p_e), so scipy's interval is [0, 0] give or take
        # the rounding of p_e; perfect agreement: 1 in every resample.
        a, b = [C] * 12, [C] * 5 + [M] * 7
        one_constant = chance_corrected(a, b, categories=LABELS, draws=300, seed=3)
        expected = stats.bootstrap(
            (np.array(a, dtype=object), np.array(b, dtype=object)),
            lambda x, y: cohen_kappa_score(x, y, labels=LABELS),
            paired=True, vectorized=False, n_resamples=300, method="percentile", rng=np.random.default_rng(3),
        ).confidence_interval  # fmt: skip
        assert expected.high - expected.low == pytest.approx(0, abs=1e-9)
        assert one_constant["cohen_kappa"] == 0 and one_constant["cohen_kappa_boot_ci"] is None
        assert one_constant["gwet_ac1_boot_ci"] is not None  # AC1 varies between resamples: its interval stays

        same = [C] * 6 + [M] * 4 + [N] * 2
        perfect = chance_corrected(same, same, categories=LABELS, draws=300, seed=3)
        assert perfect["cohen_kappa"] == pytest.approx(1.0) and perfect["cohen_kappa_boot_ci"] is None


# -- The Alternative Annotator Test: the reference procedure (nitaytech/AltTest's alt_test), written out --------------


def _reference_by_procedure(p_values: list[float], q: float) -> list[int]:
    p = np.array(p_values, dtype=float)
    m = len(p)
    order = np.argsort(p)
    thresholds = (np.arange(1, m + 1) / m) * (q / np.sum(1.0 / np.arange(1, m + 1)))
    last = -1
    for i in range(m):
        if p[order][i] <= thresholds[i]:
            last = i
    return [int(i) for i in order[: last + 1]]


def _reference_alt_test(llm: dict, humans: dict, epsilon: float, q: float = 0.05, min_instances: int = 30) -> dict:
    """The reference's alt_test with accuracy as the scoring function, returning every annotator's figures too."""
    h_set: dict = {}
    for h, anns in humans.items():
        for i in anns:
            h_set.setdefault(i, []).append(h)
    keep = {i for i in h_set if len(h_set[i]) >= 2 and i in llm}
    p_values, advantage, tested = [], [], []
    for h in humans:
        instances = [i for i in humans[h] if i in keep]
        if len(instances) < min_instances:
            continue
        llm_wins, human_wins = [], []
        for i in instances:
            rest = [humans[k][i] for k in h_set[i] if k != h]
            human_score = float(np.mean([humans[h][i] == r for r in rest]))
            llm_score = float(np.mean([llm[i] == r for r in rest]))
            llm_wins.append(1 if llm_score >= human_score else 0)
            human_wins.append(1 if human_score >= llm_score else 0)
        d = [x - y for x, y in zip(human_wins, llm_wins, strict=True)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p_values.append(float(stats.ttest_1samp(d, epsilon, alternative="less").pvalue))
        advantage.append(float(np.mean(llm_wins)))
        tested.append(h)
    rejected = _reference_by_procedure(p_values, q)
    return {
        "winning_rate": len(rejected) / len(tested),
        "advantage_prob": float(np.mean(advantage)),
        "annotators": {
            h: {
                "n": len([i for i in humans[h] if i in keep]),
                "p": p_values[k],
                "rejected": k in rejected,
                "rho": advantage[k],
            }
            for k, h in enumerate(tested)
        },
    }


def _study(*, seed: int, annotators: dict[str, float], judge_accuracy: float, items: int, per_item: int = 3):
    """Items with a true label; each item gets `per_item` annotators drawn from `annotators` (name: accuracy), the
    judge is right with `judge_accuracy`; a wrong label is one of the two others at random."""
    rng = random.Random(seed)
    names = list(annotators)

    def label(truth: str, accuracy: float) -> str:
        return truth if rng.random() < accuracy else rng.choice([x for x in LABELS if x != truth])

    annotations: dict[str, dict[str, str]] = {}
    judge: dict[str, str] = {}
    for number in range(items):
        item = f"item{number}"
        truth = rng.choice([C, C, C, M, N])
        annotations[item] = {name: label(truth, annotators[name]) for name in rng.sample(names, per_item)}
        judge[item] = label(truth, judge_accuracy)
    return judge, annotations


def _by_annotator(annotations: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    humans: dict[str, dict[str, str]] = {}
    for item, labels in annotations.items():
        for name, value in labels.items():
            humans.setdefault(name, {})[item] = value
    return dict(sorted(humans.items()))


def _assert_as_reference(result: dict, judge: dict, annotations: dict, epsilon: float) -> None:
    # A blank judge label (the judge named no option) is no label: the reference is given the labelled items only.
    judged = {item: label for item, label in judge.items() if label}
    expected = _reference_alt_test(judged, _by_annotator(annotations), epsilon)
    assert result["omega"] == pytest.approx(expected["winning_rate"])
    assert result["rho"] == pytest.approx(expected["advantage_prob"])
    assert result["passed"] == (expected["winning_rate"] >= 0.5)
    assert result["tested"] == len(expected["annotators"])
    for row in result["annotators"]:
        reference = expected["annotators"][row["annotator"]]
        assert row["n"] == reference["n"]
        assert row["rejected"] == reference["rejected"]
        assert row["rho"] == pytest.approx(reference["rho"])
        if math.isnan(reference["p"]):
            assert row["p_value"] is None
        else:
            assert row["p_value"] == pytest.approx(reference["p"], rel=1e-12)


class TestAltTest:
    def test_a_good_judge_wins_as_the_reference_procedure_says(self):
        judge, annotations = _study(
            seed=3,
            annotators={"ann": 0.7, "bea": 0.75, "cai": 0.7, "dev": 0.8, "eli": 0.65},
            judge_accuracy=0.97,
            items=150,
        )
        result = alt_test(judge=judge, annotations=annotations)
        _assert_as_reference(result, judge, annotations, 0.15)
        assert result["passed"] is True and result["omega"] > 0.5
        assert result["note"] is None and result["skipped"] == []

    def test_a_poor_judge_loses_as_the_reference_procedure_says(self):
        judge, annotations = _study(
            seed=4, annotators={"ann": 0.9, "bea": 0.9, "cai": 0.85, "dev": 0.9}, judge_accuracy=0.5, items=120
        )
        result = alt_test(judge=judge, annotations=annotations, epsilon=0.1)
        _assert_as_reference(result, judge, annotations, 0.1)
        assert result["passed"] is False and result["omega"] == 0.0

    def test_a_tie_counts_for_both_and_equal_differences_at_epsilon_give_no_p_value(self):
        # The judge copies ann: on every item of ann's both win, so d = 0 throughout. Tested at epsilon = 0, scipy's
        # p-value is NaN (0 / 0), reported as None and not rejected; at 0.15 it is 0 and rejected, as in the reference.
        judge, annotations = _study(
            seed=5, annotators={"ann": 0.8, "bea": 0.8, "cai": 0.8}, judge_accuracy=0.8, items=90
        )
        judge = {item: labels.get("ann", judge[item]) for item, labels in annotations.items()}
        at_zero = alt_test(judge=judge, annotations=annotations, epsilon=0.0)
        _assert_as_reference(at_zero, judge, annotations, 0.0)
        ann = next(row for row in at_zero["annotators"] if row["annotator"] == "ann")
        assert ann["p_value"] is None and ann["rejected"] is False and ann["rho"] == 1.0
        at_default = alt_test(judge=judge, annotations=annotations)
        _assert_as_reference(at_default, judge, annotations, 0.15)
        ann = next(row for row in at_default["annotators"] if row["annotator"] == "ann")
        assert ann["p_value"] == 0.0 and ann["rejected"] is True

    def test_annotators_below_30_items_are_skipped_and_the_rest_tested(self):
        judge, annotations = _study(
            seed=6,
            annotators={"ann": 0.8, "bea": 0.8, "cai": 0.8, "dev": 0.8},
            judge_accuracy=0.95,
            items=80,
        )
        for item in list(annotations)[:60]:
            annotations[item].pop("dev", None)
        annotations["lonely"] = {"ann": C}  # one annotation: not an item of the test
        annotations["unjudged"] = {"ann": C, "bea": C}  # no judge label: not an item either
        annotations["blank"], judge["blank"] = {"ann": C, "bea": C}, ""  # the judge named no option: nor is this
        result = alt_test(judge=judge, annotations=annotations)
        assert result["skipped"] == ["dev"]
        assert [row["annotator"] for row in result["annotators"]] == ["ann", "bea", "cai"]
        _assert_as_reference(result, judge, annotations, 0.15)
        annotations["solo"] = {"eve": C}  # an annotator with none of the test's items is skipped too
        assert alt_test(judge=judge, annotations=annotations)["skipped"] == ["dev", "eve"]

    def test_with_two_annotators_it_runs_and_recommends_three(self):
        judge, annotations = _study(
            seed=7, annotators={"ann": 0.8, "bea": 0.8}, judge_accuracy=0.9, items=40, per_item=2
        )
        result = alt_test(judge=judge, annotations=annotations)
        _assert_as_reference(result, judge, annotations, 0.15)
        assert result["tested"] == 2 and "3 or more" in result["note"]

    def test_with_fewer_than_two_tested_annotators_it_does_not_run_and_says_why(self):
        judge, annotations = _study(
            seed=8, annotators={"ann": 0.8, "bea": 0.8}, judge_accuracy=0.9, items=40, per_item=2
        )
        for item in list(annotations)[:15]:
            annotations[item] = {"ann": annotations[item]["ann"], "cai": C}
        result = alt_test(judge=judge, annotations=annotations)
        assert result["tested"] == 1 and sorted(result["skipped"]) == ["bea", "cai"]
        assert (result["omega"], result["rho"], result["passed"]) == (None, None, None)
        assert "needs at least 2 annotators with 30 or more items each" in result["note"]
        assert result["note"].endswith("1 had")
        assert alt_test(judge={}, annotations={})["note"].endswith("0 had")

    def test_omega_by_epsilon_is_the_reference_at_each_epsilon_and_rho_does_not_move(self):
        judge, annotations = _study(
            seed=9, annotators={"ann": 0.75, "bea": 0.8, "cai": 0.7, "dev": 0.8}, judge_accuracy=0.85, items=120
        )
        by_epsilon = alt_test_omega_by_epsilon(judge=judge, annotations=annotations)
        assert list(by_epsilon) == ["0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30"]
        for key, omega in by_epsilon.items():
            assert omega == pytest.approx(
                _reference_alt_test(judge, _by_annotator(annotations), float(key))["winning_rate"]
            )
        assert by_epsilon["0.00"] <= by_epsilon["0.30"]
        rhos = {alt_test(judge=judge, annotations=annotations, epsilon=e)["rho"] for e in (0.0, 0.3)}
        assert len(rhos) == 1


# -- Selective judging: a brute-force search with the binomial tail summed term by term -------------------------------


def _binomial_cdf(e: int, n: int, p: float) -> float:
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(e + 1))


def _brute_force_threshold(confidences: list[float], agree: list[bool], alpha: float, delta: float):
    """Walk the distinct confidences down while each passes; the curve at every one of them."""
    passed, curve, walking = None, [], True
    for lam in sorted(set(confidences), reverse=True):
        kept = [z for c, z in zip(confidences, agree, strict=True) if c >= lam]
        curve.append([len(kept) / len(confidences), kept.count(False) / len(kept)])
        walking = walking and _binomial_cdf(kept.count(False), len(kept), alpha) <= delta
        if walking:
            passed = lam
    return passed, curve


def _judged(seed: int, size: int) -> tuple[list[float], list[bool]]:
    """Confidences on a coarse grid (so thresholds repeat) with agreement likelier at high confidence."""
    rng = random.Random(seed)
    confidences = [round(rng.uniform(0.3, 1.0), 2) for _ in range(size)]
    return confidences, [rng.random() < c for c in confidences]


class TestSelectiveThreshold:
    @pytest.mark.parametrize(("seed", "alpha", "delta"), [(1, 0.1, 0.1), (2, 0.2, 0.1), (3, 0.15, 0.05), (4, 0.3, 0.2)])
    def test_it_is_the_last_threshold_of_the_fixed_sequence_that_passes(self, seed, alpha, delta):
        confidences, agree = _judged(seed, 400)
        expected, curve = _brute_force_threshold(confidences, agree, alpha, delta)
        result = selective_threshold(confidences=confidences, agree=agree, alpha=alpha, delta=delta)
        assert result["threshold"] == expected
        assert (result["alpha"], result["delta"], result["n"]) == (alpha, delta, 400)
        assert np.array(result["curve"]) == pytest.approx(np.array(curve))
        if expected is not None:
            kept = [z for c, z in zip(confidences, agree, strict=True) if c >= expected]
            assert result["coverage"] == pytest.approx(len(kept) / 400)
            assert result["agreement_above"] == pytest.approx(sum(kept) / len(kept))
            assert coverage_at(expected, confidences) == result["coverage"]

    def test_the_guarantee_finds_a_threshold_in_a_clear_case(self):
        confidences = [0.95] * 60 + [0.9] * 40 + [0.5] * 50
        agree = [True] * 60 + [True] * 36 + [False] * 4 + [False] * 25 + [True] * 25
        result = selective_threshold(confidences=confidences, agree=agree)
        # 0.95: 60 kept, 0 errors, P[Bin(60, .1) <= 0] = .9^60; 0.9: 100 kept, 4 errors; 0.5: 150 kept, 29 errors.
        assert (
            _binomial_cdf(0, 60, 0.1) <= 0.1 and _binomial_cdf(4, 100, 0.1) <= 0.1 and _binomial_cdf(29, 150, 0.1) > 0.1
        )
        assert result["threshold"] == 0.9
        assert result["coverage"] == pytest.approx(100 / 150)
        assert result["agreement_above"] == pytest.approx(0.96)
        assert np.array(result["curve"]) == pytest.approx(
            np.array([[60 / 150, 0.0], [100 / 150, 0.04], [1.0, 29 / 150]])
        )

    def test_when_nothing_passes_the_judge_escalates_everything(self):
        result = selective_threshold(confidences=[0.9] * 20 + [0.6] * 10, agree=[True] * 20 + [False] * 10)
        assert _binomial_cdf(0, 20, 0.1) > 0.1  # 20 clean items are not enough at alpha = delta = 0.1
        assert (result["threshold"], result["coverage"], result["agreement_above"]) == (None, 0.0, None)
        assert coverage_at(None, [0.9, 0.6]) == 0.0

    def test_no_items_give_an_empty_answer(self):
        result = selective_threshold(confidences=[], agree=[])
        assert result == {
            "alpha": 0.1,
            "delta": 0.1,
            "threshold": None,
            "coverage": 0.0,
            "agreement_above": None,
            "n": 0,
            "curve": [],
        }
        assert coverage_at(0.5, []) is None


# -- Prediction-powered rates against ppi_py 0.2.3 --------------------------------------------------------------------


@pytest.fixture(scope="module")
def ppi_py():
    """ppi_py, imported without changing this process: it imports numba at the top for functions we never call (a
    stand-in njit serves when numba is absent), and silences every warning as it loads."""
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


def _units(seed: int, n: int, N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Contexts of five samples: Y the share misgendered by people, Yhat the judge's mean probability of it."""
    rng = np.random.default_rng(seed)
    rate = rng.beta(1, 4, size=n + N)
    yhat = np.clip(rate + rng.normal(0, 0.08, size=n + N), 0, 1)
    y = rng.binomial(5, rate[:n]) / 5
    return y, yhat[:n], yhat[n:]


class TestPpiMean:
    @pytest.mark.parametrize(("seed", "n", "N"), [(1, 40, 400), (2, 30, 30), (3, 100, 900), (4, 12, 5)])
    def test_it_is_ppi_pys_estimate_and_intervals(self, ppi_py, seed, n, N):
        y, yhat, yhat_u = _units(seed, n, N)
        result = ppi_mean(y=y.tolist(), yhat=yhat.tolist(), yhat_unlabelled=yhat_u.tolist())
        estimate = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=None)))
        low, high = (float(np.squeeze(x)) for x in ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, lam=None))
        human_low, human_high = (float(x) for x in ppi_py.classical_mean_ci(y, alpha=0.05))
        assert result["ppi_rate"] == pytest.approx(estimate, abs=1e-9)
        assert result["ppi_ci"] == pytest.approx([low, high], abs=1e-9)
        assert result["human_rate"] == pytest.approx(y.mean(), abs=1e-12)
        assert result["human_ci"] == pytest.approx([human_low, human_high], abs=1e-9)
        assert result["judge_rate"] == pytest.approx(np.concatenate([yhat, yhat_u]).mean(), abs=1e-12)
        assert (result["n"], result["N"]) == (n, N)
        assert result["n_eff"] == pytest.approx(n * ((human_high - human_low) / (high - low)) ** 2, rel=1e-9)

    def test_a_good_judge_is_worth_more_labelled_units_than_it_has(self):
        y, yhat, yhat_u = _units(1, 40, 400)
        assert ppi_mean(y=y, yhat=yhat, yhat_unlabelled=yhat_u)["n_eff"] > 40

    def test_another_alpha_gives_ppi_pys_interval_at_that_level(self, ppi_py):
        y, yhat, yhat_u = _units(5, 50, 200)
        low, high = (float(np.squeeze(x)) for x in ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.1, lam=None))
        assert ppi_mean(y=y, yhat=yhat, yhat_unlabelled=yhat_u, alpha=0.1)["ppi_ci"] == pytest.approx(
            [low, high], abs=1e-9
        )

    def test_a_constant_judge_gives_the_people_only_answer_not_nan(self):
        y = [0.0, 0.2, 0.4, 0.0, 0.6]
        result = ppi_mean(y=y, yhat=[0.3] * 5, yhat_unlabelled=[0.3] * 20)
        assert result["ppi_rate"] == pytest.approx(np.mean(y))
        assert result["ppi_ci"] == pytest.approx(result["human_ci"])
        assert result["n_eff"] == pytest.approx(5)

    def test_degenerate_inputs_give_none_without_an_exception(self):
        one = ppi_mean(y=[1.0], yhat=[0.8], yhat_unlabelled=[0.1, 0.2])
        assert (one["ppi_rate"], one["ppi_ci"], one["human_ci"], one["n_eff"]) == (None, None, None, None)
        assert one["human_rate"] == 1.0 and one["judge_rate"] == pytest.approx(1.1 / 3)
        none = ppi_mean(y=[], yhat=[], yhat_unlabelled=[])
        assert none == {
            "n": 0,
            "N": 0,
            "ppi_rate": None,
            "ppi_ci": None,
            "ci_clipped": False,
            "human_rate": None,
            "human_ci": None,
            "judge_rate": None,
            "n_eff": None,
        }
        no_unlabelled = ppi_mean(y=[0.0, 1.0, 0.5], yhat=[0.1, 0.9, 0.4], yhat_unlabelled=[])
        assert no_unlabelled["ppi_rate"] is None and no_unlabelled["human_ci"] is not None
        everyone_agrees = ppi_mean(y=[0.0] * 4, yhat=[0.0] * 4, yhat_unlabelled=[0.0] * 3)
        assert everyone_agrees["ppi_ci"] == [0.0, 0.0] and everyone_agrees["n_eff"] is None


@pytest.mark.parametrize("seed", range(8))
def test_chance_corrected_point_figures_are_those_of_each_figures_own_function(seed):
    """The figures counted once from the two raters' codes are those of cohen_kappa_square, scott_pi, gwet_ac1 and
    per_class_kappa on the labels themselves, float for float (a label outside the set and a missing one among
    them)."""
    from analysis.metrics.agreement import cohen_kappa_square
    from analysis.metrics.multirater import gwet_ac1
    from analysis.metrics.verdict import per_class_kappa, scott_pi

    rng = random.Random(seed)
    labels = ["a", "b", "c", "d"]
    n = rng.choice([1, 2, 5, 40, 300])
    a = [rng.choice(labels[:3]) for _ in range(n)]
    b = [rng.choice([*labels[:3], "extra"]) for _ in range(n)]
    figures = chance_corrected(a, b, categories=labels, draws=20)
    every = [*labels, "extra"] if "extra" in b else labels
    assert figures["cohen_kappa"] == cohen_kappa_square(a, b, categories=every)["kappa_square"]
    assert figures["scott_pi"] == scott_pi(a, b, categories=every)
    assert figures["gwet_ac1"] == gwet_ac1([[x, y] for x, y in zip(a, b, strict=True)], categories=every)["gwet_ac1"]
    assert figures["per_class_kappa"] == per_class_kappa(a, b, categories=every)
