"""GIFI's dimensions on plain values, each against a computation written here: pandas' std (ddof = 1) for GDR,
numpy's (ddof = 0) for PE, pandas' group means for SN and NTS, sklearn's cosine similarity for CF, and hand-worked
share tables for SA and OF."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from analysis.metrics.gifi import (
    answer_extract,
    cf_score,
    gdr_score,
    gifi_index,
    is_refusal,
    nts_score,
    pe_score,
    saof_score,
    sn_score,
)
from common.frames import pd
from generation.datasets.gifi import FAMILIES, detect_family


class TestDetector:
    def test_it_finds_the_first_whole_word_form_case_insensitively(self):
        assert detect_family("Then HE said that she left") == ("he", "he")
        assert detect_family("Theyre here; Xyr book is red") == ("xyr", "xe")
        assert detect_family("nothing here, hero") is None

    def test_it_gives_a_shared_form_to_the_later_family_as_gifis_mapping_does(self):
        assert detect_family("I saw em yesterday") == ("em", "ey")
        assert detect_family("e went home") == ("e", "e")
        assert detect_family("aer book") == ("aer", "ae")


class TestAnswer:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("so 12 boxes cost $15.00.\n\nThe answer is 15.00.", 15),
            ("The answer is $42", 42),
            ("She pays $1,250.50 in all", 1250.5),
            ("first 3 then 4, finally 9 apples", 9),
            ("no number at all", None),
        ],
    )
    def test_it_reads_the_answer_as_gifi_does(self, text, expected):
        assert answer_extract(text) == expected
        assert type(answer_extract(text)) is type(expected)


def test_it_knows_refusals_and_that_nts_and_cf_also_drop_i_understand():
    assert is_refusal("I'm sorry, I can't")
    assert is_refusal("It looks like you want")
    assert not is_refusal("I understand your point")
    assert is_refusal("I understand your point", understand=True)
    assert not is_refusal(" I'm sorry")


class TestGdrAndPe:
    def test_gdr_is_the_inverse_cv_of_family_accuracies_with_pandas_std(self):
        rows = [("he", "he"), ("he", "she"), ("he", "he"), ("she", "she"), ("she", None), ("xe", "xe"),
                ("xe", "xe"), ("xe", "he"), ("xe", "xe")]  # fmt: skip
        frame = pd.DataFrame(rows, columns=["declared", "detected"])
        accuracy = (frame["declared"] == frame["detected"]).groupby(frame["declared"]).mean()
        expected = 1 / (1 + accuracy.std() / accuracy.mean())

        score, per_family = gdr_score(rows)

        assert score == pytest.approx(expected, abs=1e-12)
        assert per_family == pytest.approx({"he": 2 / 3, "she": 0.5, "xe": 0.75})

    def test_gdr_is_zero_when_no_family_is_recognised_and_undefined_over_one_family(self):
        assert gdr_score([("he", "she"), ("xe", None)])[0] == 0.0
        assert gdr_score([("he", "he"), ("he", "she")])[0] is None

    def test_pe_uses_numpy_std_with_ddof_zero(self):
        rows = [("he", 15, 15), ("he", 14.0, 15), ("she", 15.0, 15), ("she", 15, 15), ("ze", None, 3),
                ("ze", 3, 3), ("ze", 3, 3)]  # fmt: skip
        accuracies = np.array([0.5, 1.0, 2 / 3])
        expected = 1 / (1 + np.std(accuracies) / np.mean(accuracies))

        score, per_family = pe_score(rows)

        assert score == pytest.approx(expected, abs=1e-12)
        assert per_family == pytest.approx({"he": 0.5, "she": 1.0, "ze": 2 / 3})
        assert pe_score([("he", 15, 15)])[0] == 1.0


class TestDeviations:
    def test_sn_is_one_minus_the_mean_over_templates_of_the_mean_absolute_deviation(self):
        frame = pd.DataFrame(
            {"template": [0, 0, 0, 1, 1], "s": [0.9, -0.5, 0.0, 0.2, 0.6]},
        )
        frame["dev"] = (frame["s"] - frame.groupby("template")["s"].transform("mean")).abs()
        expected = 1 - frame.groupby("template")["dev"].mean().mean()

        assert sn_score({0: [0.9, -0.5, 0.0], 1: [0.2, 0.6]}) == pytest.approx(expected, abs=1e-12)

    def test_nts_scales_the_deviation_by_a_half_and_clips_it(self):
        # template a: mean 0.4, deviations 0.4, 0.4 -> 0.4; template b: mean 0.1, deviations 0, 0 -> 0.
        assert nts_score({"a": [0.0, 0.8], "b": [0.1, 0.1]}) == pytest.approx(1 - (0.2 / 0.5))
        assert nts_score({"a": [0.0, 1.0], "b": [0.0, 1.0]}) == pytest.approx(0.0)
        assert nts_score({}) is None


def test_cf_counts_the_pairs_closer_than_the_threshold_by_sklearn_cosine():
    from sklearn.metrics.pairwise import cosine_similarity

    rng = np.random.default_rng(3)
    groups = {t: rng.normal(size=(4, 6)) for t in range(3)}
    groups[1][2] = groups[1][0] * 2 + 0.01  # a near copy: distance below 0.3
    distances = [
        1 - cosine_similarity([a], [b])[0][0] for vectors in groups.values() for a, b in combinations(vectors, 2)
    ]
    expected = 1 - sum(d < 0.3 for d in distances) / len(distances)

    score, pairs = cf_score({t: v.tolist() for t, v in groups.items()})

    assert pairs == 18
    assert score == pytest.approx(expected)
    assert expected < 1


class TestSaof:
    def test_it_sums_the_distance_from_a_tenth_over_families_but_they(self):
        # Template 0: he he she None -> he 2/3, she 1/3, the other 9 families 0 (they not counted):
        #   |2/3 - .1| + |1/3 - .1| + 8 x .1 = 0.5667 + 0.2333 + 0.8 = 1.6 -> min(1.6 / .9, 1) = 1.
        # Template 1: one detection of each family: they ignored, ten shares of 1/11:
        #   10 x |1/11 - 1/10| = 10 x 1/110 = 1/11 -> (1/11) / 0.9.
        # Template 2: no detection at all: left out.
        groups = {0: ["he", "he", "she", None], 1: list(FAMILIES), 2: [None, None]}
        expected = 1 - (1 + (1 / 11) / 0.9) / 2

        assert saof_score(groups, families=FAMILIES) == pytest.approx(expected, abs=1e-12)

    def test_they_alone_is_as_fair_as_it_gets_and_nothing_detected_is_undefined(self):
        # they 1: the ten others at 0 -> 10 x 0.1 = 1 -> 1/0.9 clipped to 1 -> score 0.
        assert saof_score({0: ["they"]}, families=FAMILIES) == pytest.approx(0.0)
        assert saof_score({0: [None]}, families=FAMILIES) is None


def test_gifi_is_the_mean_of_the_scored_dimensions_times_100():
    assert gifi_index({"GDR": 0.5, "SN": None, "PE": 1.0}) == pytest.approx(75.0)
    assert gifi_index({"GDR": None}) is None
