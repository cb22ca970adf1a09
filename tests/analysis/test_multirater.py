"""Three raters per overlap item, gold and training items beside them: the multi-rater figures against statsmodels,
krippendorff and scikit-learn, the majority human label, and the annotator_quality rows worked out by hand."""

from __future__ import annotations

import csv
import io
import itertools

import krippendorff
import numpy as np
import pandas as pd
import pytest
from irrCAC.raw import CAC
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from accounts.roles import ANNOTATOR
from analysis.metrics.multirater import fleiss_kappa, krippendorff_alpha_all, majority, pairwise_agreement
from analysis.report.exports.csv import report_csv
from analysis.selectors import quality
from analysis.services import report_build
from annotation.models import Adjudication
from tests.conftest import _person
from tests.factories import AnnotationFactory, PoolFactory, PoolItemFactory

C, M, N = "correct", "misgendering", "no_pronoun"

# item: [(annotator, label, extraneous, seconds)] in the order they were made
STUDY = {
    1: [("ana", C, False, 12.0), ("bo", C, False, 2.0), ("cy", C, False, 8.0)],
    2: [("ana", M, True, 1.0), ("bo", C, False, 2.5), ("cy", C, True, 9.0)],
    3: [("ana", M, False, 20.0), ("bo", M, False, 1.5), ("cy", C, False, 7.0)],
    4: [("ana", N, False, 6.0), ("bo", C, True, 0.5), ("cy", M, True, 10.0)],
    5: [("bo", C, False, 2.0), ("cy", M, False, 11.0)],
    6: [("ana", C, False, 4.0)],
}
# gold items: (gold label, [(annotator, label, seconds)])
GOLD = [(C, [("ana", C, 5.0), ("bo", M, 1.0)]), (M, [("ana", M, 7.0), ("cy", M, 6.0)])]
TRAINING = [(M, [("ana", C, 0.2), ("bo", C, 0.1)])]


@pytest.fixture
def raters(annotator, second_annotator):
    return {"ana": annotator, "bo": second_annotator, "cy": _person("cy", ANNOTATOR)}


@pytest.fixture
def pool(raters):
    return three_rater_pool(raters=raters)


def three_rater_pool(*, raters: dict, name: str = "three"):
    """STUDY, GOLD and TRAINING above as rows of a pool."""
    pool = PoolFactory(name=name)
    for number, made in STUDY.items():
        item = PoolItemFactory(pool=pool, heuristic_correct=number != 3)
        for name, label, extraneous, seconds in made:
            AnnotationFactory(item=item, annotator=raters[name], label=label, extraneous=extraneous, seconds=seconds)
        if number == 2:  # settles only the extraneous words: the label stays the majority's
            Adjudication.objects.create(item=item, label="", extraneous=False)
    for kind, items in (("gold", GOLD), ("training", TRAINING)):
        for gold_label, made in items:
            item = PoolItemFactory(pool=pool, kind=kind, gold_label=gold_label, heuristic_correct=False)
            for name, label, seconds in made:
                AnnotationFactory(item=item, annotator=raters[name], label=label, seconds=seconds)
    return pool


@pytest.fixture
def report(once, db):
    """The three raters' report, built once for the module (tests/analysis/conftest.py): these tests only read it."""

    def build():
        raters = {name: _person(name, ANNOTATOR) for name in ("ana", "bo", "cy")}
        return report_build(pool=three_rater_pool(raters=raters))

    return once("three", build)


def _overlap(column: int) -> list[list]:
    return [[a[column] for a in annotations] for annotations in STUDY.values() if len(annotations) > 1]


class TestMetrics:
    def test_fleiss_kappa_is_statsmodels_when_every_item_has_the_same_raters(self):
        ratings = [["a", "a", "b"], ["b", "b", "b"], ["a", "c", "b"], ["c", "c", "c"], ["a"]]
        counts, _ = aggregate_raters(np.array([[{"a": 0, "b": 1, "c": 2}[r] for r in row] for row in ratings[:4]]))
        result = fleiss_kappa(ratings)
        assert result["fleiss_n_items"] == 4  # the item with one rating adds nothing
        assert result["fleiss_kappa"] == pytest.approx(sm_fleiss_kappa(counts, method="fleiss"))

    def test_fleiss_kappa_is_undefined_when_every_rating_is_the_same(self):
        assert fleiss_kappa([["a"] * 3, ["a"] * 2])["fleiss_kappa"] is None
        assert fleiss_kappa([["a", "b", "a"]])["fleiss_kappa"] is None  # one item

    def test_krippendorff_alpha_takes_missing_ratings(self):
        ratings = [[1, 1, 0], [0, 0], [1, 0, 0], [1], [0, 0, 0]]
        # the same data as raters x items with NaN where a rater gave nothing
        data = np.array([[1, 0, 1, 1, 0], [1, 0, 0, np.nan, 0], [0, np.nan, 0, np.nan, 0]])
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        assert krippendorff_alpha_all(ratings) == pytest.approx(expected)

    def test_majority_breaks_ties_by_the_first_tied_label(self):
        assert majority(["b", "a", "a"]) == "a"
        assert majority(["b", "a"]) == "b"
        assert majority(["c", "a", "b", "b", "a"]) == "a"  # a and b tie; a was given first
        assert majority([]) is None

    def test_pairwise_kappa_is_scikit_learn_on_each_pairs_shared_items(self):
        items = [[("x", 1), ("y", 1)], [("x", 0), ("y", 1), ("z", 0)], [("y", 0), ("z", 0)], [("x", 1), ("z", 1)]]
        rows = {(r["annotator_1"], r["annotator_2"]): r for r in pairwise_agreement(items, categories=[0, 1])}
        assert set(rows) == {("x", "y"), ("x", "z"), ("y", "z")}
        assert rows[("x", "y")]["n_items"] == 2
        assert rows[("x", "y")]["raw_agreement"] == pytest.approx(0.5)
        assert rows[("x", "y")]["cohen_kappa"] == pytest.approx(cohen_kappa_score([1, 0], [1, 1]))
        assert rows[("y", "z")]["cohen_kappa"] == pytest.approx(cohen_kappa_score([1, 0], [0, 0], labels=[0, 1]))
        # exactly one side constant: kappa is 0, not null (docs/domain.md, 'Multi-rater statistics')
        assert rows[("y", "z")]["cohen_kappa"] == pytest.approx(0)


class TestReportWithThreeRaters:
    def test_it_leaves_gold_and_training_items_out_of_every_study_figure(self, report):
        assert report["n_annotated"] == len(STUDY)
        assert sum(row["n"] for row in report["label_distribution"]) == len(STUDY)
        assert report["inter_annotator"]["pronoun_label"]["n_items"] == 5

    def test_the_human_label_is_the_majority_with_ties_to_the_first_tied_label(self, report):
        # items 1-6: c, c (adjudication without a label), m, n (three-way tie: ana first), c (bo first), c
        (row,) = report["label_distribution"]
        assert (row[C], row[M], row[N]) == (4, 1, 1)
        # extraneous: 1 no, 2 adjudicated no, 3 no, 4 majority yes, 5 no, 6 no
        (rate,) = report["extraneous_rate"]
        assert rate["rate"] == pytest.approx(1 / 6)

    def test_it_gives_fleiss_kappa_over_every_item_with_two_or_more_raters(self, report):
        block = report["inter_annotator"]["pronoun_label"]
        # items 1-4 have three ratings, item 5 two: irrCAC's Fleiss kappa takes each item's own count
        ratings = pd.DataFrame([row + [None] * (3 - len(row)) for row in _overlap(1)])
        expected = CAC(ratings, categories=[C, M, N]).fleiss()["est"]["coefficient_value"]
        assert block["n_raters"] == 3
        assert block["fleiss_n_items"] == 5
        assert block["fleiss_kappa"] == pytest.approx(expected, abs=1e-5)

    def test_it_gives_krippendorff_alpha_over_all_raters_by_person(self, report):
        names = ["ana", "bo", "cy"]
        for view, value in (("pronoun_label", lambda a: {C: 0, M: 1, N: 2}[a[1]]), ("extraneous", lambda a: a[2])):
            data = np.full((3, len(STUDY)), np.nan)
            for column, made in enumerate(STUDY.values()):
                for annotation in made:
                    data[names.index(annotation[0]), column] = value(annotation)
            expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
            assert report["inter_annotator"][view]["krippendorff_alpha_all"] == pytest.approx(expected)

    def test_it_gives_cohen_kappa_for_every_annotator_pair(self, report):
        pairs = {
            (r["annotator_1"], r["annotator_2"]): r for r in report["inter_annotator"]["pronoun_label"]["pairwise"]
        }
        assert set(pairs) == {("ana", "bo"), ("ana", "cy"), ("bo", "cy")}
        bo_cy = pairs[("bo", "cy")]
        bo, cy = [C, C, M, C, C], [C, C, C, M, M]  # items 1-5
        assert bo_cy["n_items"] == 5
        assert bo_cy["raw_agreement"] == pytest.approx(2 / 5)
        assert bo_cy["cohen_kappa"] == pytest.approx(cohen_kappa_score(bo, cy, labels=[C, M, N]))
        assert bo_cy["kappa_ci"][0] < bo_cy["cohen_kappa"] < bo_cy["kappa_ci"][1]
        binary = {
            (r["annotator_1"], r["annotator_2"]): r for r in report["inter_annotator"]["pronoun_binary"]["pairwise"]
        }
        # ana [c, m, m, n] vs bo [c, c, m, c] on items 1-4, as binary: [1, 0, 0, 1] vs [1, 1, 0, 1]
        assert binary[("ana", "bo")]["cohen_kappa"] == pytest.approx(0.5)

    def test_it_counts_every_pair_of_an_items_annotations(self, report):
        # docs/domain.md, "Headline figures": with three raters on some items, raw agreement pools every pair of an
        # item's annotations (not its first two) and the kappa is Light's, here over no pair (none shares 30 items).
        block = report["inter_annotator"]["pronoun_label"]
        pairs = [x == y for row in _overlap(1) for x, y in itertools.combinations(row, 2)]
        assert block["n_pairs"] == len(pairs) == 4 * 3 + 1
        assert block["raw_agreement"] == pytest.approx(np.mean(pairs))
        assert (block["kappa_method"], block["cohen_kappa"]) == ("light", None)


class TestAnnotatorQuality:
    def _rows(self, report) -> dict:
        return {row["annotator"]: row for row in report["annotator_quality"]}

    def test_it_scores_gold_answers_by_label(self, report):
        rows = self._rows(report)
        assert [(rows[n]["gold_n"], rows[n]["gold_correct"]) for n in ("ana", "bo", "cy")] == [(2, 2), (1, 0), (1, 1)]
        assert rows["ana"]["gold_accuracy"] == 1.0
        assert rows["bo"]["gold_accuracy"] == 0.0

    def test_it_counts_study_items_and_times_study_and_gold_decisions(self, report):
        rows = self._rows(report)
        assert [rows[n]["items"] for n in ("ana", "bo", "cy")] == [5, 5, 5]
        ana = [12.0, 1.0, 20.0, 6.0, 4.0, 5.0, 7.0]  # training (0.2 s) left out
        assert rows["ana"]["median_seconds"] == pytest.approx(np.median(ana))
        assert rows["ana"]["fast_share"] == pytest.approx(1 / 7)
        assert rows["bo"]["fast_share"] == pytest.approx(1.0)  # 2, 2.5, 1.5, 0.5, 2 and 1 s: all under 3 s
        assert rows["bo"]["median_seconds"] == pytest.approx(np.median([2.0, 2.5, 1.5, 0.5, 2.0, 1.0]))

    def test_it_gives_raw_agreement_with_the_other_raters(self, report):
        # ana's comparisons (bo, cy) on items 1-4: (T, T), (F, F), (T, F), (F, F)
        # bo's: item 1 (T, T), 2 (F, T), 3 (T, F), 4 (F, F), 5 (F); cy's: 1 (T, T), 2 (F, T), 3 (F, F), 4 (F, F), 5 (F)
        rows = self._rows(report)
        assert (rows["ana"]["agreement"], rows["ana"]["agreement_n"]) == (pytest.approx(3 / 8), 8)
        assert (rows["bo"]["agreement"], rows["bo"]["agreement_n"]) == (pytest.approx(4 / 9), 9)
        assert (rows["cy"]["agreement"], rows["cy"]["agreement_n"]) == (pytest.approx(3 / 9), 9)

    def test_it_warns_about_gold_under_the_pass_mark_and_fast_decisions(self, pool):
        warnings = {(w["annotator"], w["kind"]) for w in quality.quality_dashboard(pool=pool)["warnings"]}
        assert warnings == {("bo", "gold_accuracy"), ("bo", "fast")}

    def test_the_kappa_matrix_is_symmetric_with_the_pairwise_kappas(self, pool):
        report = report_build(pool=pool)
        matrix = quality.quality_dashboard(pool=pool)["kappa_matrix"]
        assert matrix["annotators"] == ["ana", "bo", "cy"]
        pairs = {
            (r["annotator_1"], r["annotator_2"]): r for r in report["inter_annotator"]["pronoun_label"]["pairwise"]
        }
        assert matrix["kappa"][1][2] == matrix["kappa"][2][1] == pytest.approx(pairs[("bo", "cy")]["cohen_kappa"])
        assert matrix["n"][0][1] == 4
        assert matrix["kappa"][0][0] is None

    def test_agreement_over_time_follows_the_second_annotations_in_windows(self, pool):
        frame = quality.annotation_frame(pool=pool)
        windows = quality.agreement_over_time(frame=frame, labels=[C, M, N], window=2)
        # overlap items in the order of their second annotation: 1, 2, 3, 4, 5; first two labels compared
        assert [w["n_items"] for w in windows] == [2, 2, 1]
        assert [w["raw_agreement"] for w in windows] == [pytest.approx(0.5), pytest.approx(0.5), 0.0]
        assert windows[0]["start"] <= windows[0]["end"] <= windows[1]["start"]

    def test_seconds_are_summarised_per_annotator(self, pool):
        seconds = {row["annotator"]: row for row in quality.quality_dashboard(pool=pool)["seconds"]}
        cy = [8.0, 9.0, 7.0, 10.0, 11.0, 6.0]
        assert seconds["cy"]["n"] == 6
        assert seconds["cy"]["median"] == pytest.approx(np.median(cy))
        assert seconds["cy"]["q1"] == pytest.approx(np.percentile(cy, 25))
        assert sum(seconds["cy"]["histogram"]) == 6
        assert seconds["cy"]["histogram"][quality.SECONDS_BINS.index(5)] == 4  # 6, 7, 8 and 9 s fall in [5, 10)


class TestCsv:
    def test_pairwise_and_annotator_quality_are_csv_tables(self, report):
        pairwise = list(csv.DictReader(io.StringIO(report_csv(report=report, table="pairwise"))))
        assert {(r["measure"], r["annotator_1"], r["annotator_2"]) for r in pairwise} == {
            (m, a, b)
            for m in ("pronoun_label", "pronoun_binary", "extraneous")
            for a, b in (("ana", "bo"), ("ana", "cy"), ("bo", "cy"))
        }
        assert {"kappa_ci_low", "kappa_ci_high", "raw_agreement", "n_items"} <= set(pairwise[0])
        quality_rows = list(csv.DictReader(io.StringIO(report_csv(report=report, table="annotator_quality"))))
        assert [r["annotator"] for r in quality_rows] == ["ana", "bo", "cy"]
        assert float(quality_rows[0]["gold_accuracy"]) == 1.0
        inter = list(csv.DictReader(io.StringIO(report_csv(report=report, table="inter_annotator"))))
        assert "pairwise" not in inter[0] and inter[0]["n_raters"] == "3"
