"""The judges' part of the report, against a hand-worked table and independent libraries (scipy, sklearn)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax
from scipy.stats import sem
from sklearn.metrics import brier_score_loss

from analysis.report.build import report_data
from tests.factories import AnnotationFactory
from tests.judging.conftest import finished_run

pytestmark = pytest.mark.django_db

OPTIONS = ["correct", "misgendering", "no_pronoun"]
# item: annotations, heuristic, judge label, confidence
TABLE = [
    (["correct", "correct"], True, "correct", 0.90),  # unanimous, human 1, judge 1, right
    (["misgendering", "misgendering"], True, "misgendering", 0.65),  # unanimous, human 0, judge 0, right
    (["correct", "misgendering"], False, "misgendering", 0.55),  # split: the first annotator's label, judge wrong
    (["no_pronoun"], True, "correct", 0.95),  # one annotator: in `all` only; judge wrong (3-way), agrees (binary)
    ([], False, "correct", 0.80),  # not annotated: judge vs heuristic only
]


def _judged_table(judge, judged_pool, annotator, second_annotator) -> dict:
    """The hand-worked TABLE written into the pool, with a finished judge run; returns the pool's report."""
    pool, items = judged_pool
    labels = {}
    for item, (given_labels, heuristic, label, confidence) in zip(items, TABLE, strict=True):
        item.heuristic_correct = heuristic
        item.save(update_fields=["heuristic_correct"])
        for person, given in zip([annotator, second_annotator], given_labels, strict=False):
            AnnotationFactory(item=item, annotator=person, label=given)
        scores = {option: (-0.5 if option == label else -2.0 - index) for index, option in enumerate(OPTIONS)}
        labels[item] = (label, confidence, scores)
    finished_run(judge=judge, pool=pool, labels=labels)
    return report_data(pool=pool)


@pytest.fixture
def report(once, judge, judged_pool, annotator, second_annotator):
    """The report of the TABLE, built once per module (tests that only read it)."""
    return once("table", lambda: _judged_table(judge, judged_pool, annotator, second_annotator))


def _row(rows, split):
    (row,) = [row for row in rows if row["human_agreement"] == split]
    assert (row["judge"], row["model"], row["dataset"], row["setting"], row["pronoun"]) == (
        "smol-judge", "test-model", "misgendered", "pre", "xe",
    )  # fmt: skip
    return row


def test_human_vs_judge_is_split_by_human_agreement(report):
    rows = report["human_vs_judge"]
    every = _row(rows, "all")
    agree = np.array([1, 1, 0, 1], dtype=float)  # human binary 1 0 1 1 against judge binary 1 0 0 1
    assert (every["agreement"], every["n"]) == (pytest.approx(agree.mean()), 4)
    assert every["sem"] == pytest.approx(sem(agree))
    assert (_row(rows, "unanimous")["agreement"], _row(rows, "unanimous")["n"]) == (1.0, 2)
    assert (_row(rows, "split")["agreement"], _row(rows, "split")["n"], _row(rows, "split")["sem"]) == (0.0, 1, None)


def test_judge_vs_heuristic_counts_every_judged_item(report):
    rows = report["judge_vs_heuristic"]
    agree = np.array([1, 0, 1, 1, 0], dtype=float)  # judge 1 0 0 1 1 against heuristic 1 1 0 1 0
    assert (_row(rows, "all")["agreement"], _row(rows, "all")["n"]) == (pytest.approx(agree.mean()), 5)
    assert _row(rows, "all")["sem"] == pytest.approx(sem(agree))
    assert (_row(rows, "unanimous")["agreement"], _row(rows, "split")["agreement"]) == (0.5, 1.0)


def test_calibration_against_the_human_label(report):
    (row,) = report["judge_calibration"]
    confidence = np.array([0.90, 0.65, 0.55, 0.95])
    correct = np.array([1, 1, 0, 0])
    # By hand: bins 9 (0.90, 0.95: accuracy 0.5), 6 (0.65: 1) and 5 (0.55: 0).
    assert row["ece"] == pytest.approx(2 / 4 * abs(0.5 - 0.925) + 1 / 4 * abs(1 - 0.65) + 1 / 4 * abs(0 - 0.55))
    assert row["brier"] == pytest.approx(brier_score_loss(correct, confidence))
    assert (row["n"], row["accuracy"], row["origin"]) == (4, 0.5, "judge:smol-judge")
    humans = ["correct", "misgendering", "correct", "no_pronoun"]
    expected = []
    for (_, _, label, _), human in zip(TABLE[:4], humans, strict=True):
        scores = [-0.5 if option == label else -2.0 - index for index, option in enumerate(OPTIONS)]
        target = np.array([option == human for option in OPTIONS], dtype=float)
        expected.append(((softmax(scores) - target) ** 2).sum())
    assert row["brier_multiclass"] == pytest.approx(np.mean(expected))


def test_the_reliability_table_has_ten_bins_and_the_plot_draws(report):
    from analysis.plots import plot_figures, plot_render

    bins = report["judge_reliability"]
    assert len(bins) == 10 and [b["n"] for b in bins] == [0, 0, 0, 0, 0, 1, 1, 0, 0, 2]
    assert bins[9]["confidence"] == pytest.approx(0.925) and bins[9]["accuracy"] == 0.5
    assert "judge_reliability" in [figure["name"] for figure in plot_figures(report=report)]
    assert plot_render(report=report, name="judge_reliability", fmt="svg").startswith(b"<?xml")


def test_human_figures_ignore_the_judge(report):
    assert report["inter_annotator"]["pronoun_label"]["n_items"] == 3  # the three items two people annotated
    assert all("judge" not in row for row in report["human_vs_heuristic"])


def test_the_page_says_a_judge_is_a_model(client, researcher, judge, judged_pool, annotator, second_annotator):
    report = _judged_table(judge, judged_pool, annotator, second_annotator)
    client.force_login(researcher)
    page = client.get(f"/reports/{report['pool']}/").content.decode()
    assert "A judge is a model; its agreement with humans is itself a result." in page
    assert 'id="plot-judge_reliability"' in page


def test_calibration_has_a_row_per_model_and_dataset_with_at_least_30_items(judge, annotator):
    # docs/domain.md, "Machine raters": pooled per judge run, and per model x dataset where each has >= 30 items.
    from tests.factories import PoolFactory, PoolItemFactory

    pool = PoolFactory(name="calibrated")
    rng = np.random.default_rng(5)
    groups = {("m1", "misgendered"): 30, ("m2", "misgendered"): 31, ("m1", "ruff"): 29}
    labels, by_group = {}, {group: ([], []) for group in groups}
    for (model, dataset), count in groups.items():
        for _ in range(count):
            item = PoolItemFactory(pool=pool, model_name=model, dataset=dataset)
            human = str(rng.choice(OPTIONS))
            AnnotationFactory(item=item, annotator=annotator, label=human)
            label, confidence = str(rng.choice(OPTIONS)), float(rng.uniform(0.34, 1.0))
            scores = {option: (-0.5 if option == label else -2.0) for option in OPTIONS}
            labels[item] = (label, confidence, scores)
            by_group[(model, dataset)][0].append(confidence)
            by_group[(model, dataset)][1].append(float(label == human))
    finished_run(judge=judge, pool=pool, labels=labels)

    rows = report_data(pool=pool)["judge_calibration"]

    assert [(row["model"], row["dataset"], row["n"]) for row in rows] == [
        (None, None, 90),  # the pooled row first
        ("m1", "misgendered", 30),
        ("m2", "misgendered", 31),  # m1 x ruff has 29 items: no row of its own
    ]
    for row in rows[1:]:
        confidence, correct = (np.array(v) for v in by_group[(row["model"], row["dataset"])])
        assert row["brier"] == pytest.approx(brier_score_loss(correct, confidence))
        assert row["accuracy"] == pytest.approx(correct.mean())
        assert row["judge"] == "smol-judge"
