"""The judge's verdict in the report: a run over a generation job counts for the pool drawn from it, and every figure
of `judge_verdict` and `prediction_powered` equals the same figure worked out here from the study's plain records
(the metrics themselves are held to their references in tests/analysis/test_verdict_metrics.py)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from itertools import combinations

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from analysis.metrics.verdict import alt_test, chance_corrected, ppi_mean
from analysis.report.build import report_data
from analysis.report.parts import judge_verdict_rows
from analysis.selectors.judges import judge_frame
from analysis.selectors.verdict import VerdictParameters
from analysis.services import report_build, report_is_cached
from annotation.machine import machine_labels
from annotation.schema import DEFAULT_LABELS, MISGENDERING
from tests.judging.verdict_study import ANNOTATORS, FEW

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(verdict_study):
    return verdict_study


def _human_label(study, item_id):
    """docs/domain.md, "The judge's verdict": adjudicated, else the majority; a tie has none."""
    if item_id in study.adjudicated:
        return study.adjudicated[item_id]
    ranked = Counter(study.annotations[item_id].values()).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def _judge_label(study, generation_id):
    scores = study.scores[generation_id]
    return max(DEFAULT_LABELS, key=lambda label: (scores[label], -DEFAULT_LABELS.index(label)))


def _confidence(study, generation_id):
    """The judge's confidence as its run stored it (an input of the verdict, like its label)."""
    return study.confidence[generation_id]


def _p_misgendering(study, generation_id):
    scores = np.array([study.scores[generation_id][label] for label in DEFAULT_LABELS])
    weights = np.exp(scores - scores.max())
    return float(weights[DEFAULT_LABELS.index(MISGENDERING)] / weights.sum())


def test_each_pool_item_takes_the_label_of_its_generation(study):
    shown = machine_labels(pool=study.pool, item_ids=list(study.items))
    for item_id, generation_id in study.items.items():
        (label,) = shown[item_id]
        assert (label.origin, label.label) == (f"judge:{study.run.judge.name}", _judge_label(study, generation_id))
    frame = judge_frame(pool=study.pool, human=_frame(study))
    assert len(frame) == len(study.items) and set(frame["judge"]) == {study.run.judge.name}


def _frame(study):
    from analysis.selectors.human import pool_item_frame

    return pool_item_frame(pool=study.pool)


def test_the_verdict_row_counts_the_items_left_out_for_a_tie(study, verdict_report, client, researcher):
    (row,) = verdict_report["judge_verdict"]
    ties = [i for i in study.items if study.annotations.get(i) and _human_label(study, i) is None]
    assert ties, "the study has tied items"
    assert row["n_ties"] == len(ties)
    (flat,) = judge_verdict_rows(verdict_report)
    assert flat["n_ties"] == len(ties)
    client.force_login(researcher)
    page = client.get(f"/reports/{study.pool.name}/").content.decode()
    assert f"{len(ties)} annotated items judged by this run have no human label" in page


def test_the_verdict_row_holds_the_alternative_annotator_test_of_the_study(study, verdict_report):
    (row,) = verdict_report["judge_verdict"]
    assert (row["judge"], row["version"], row["run"], row["epsilon"], row["q"]) == (
        study.run.judge.name, study.run.judge.version, study.run.pk, 0.15, 0.05,
    )  # fmt: skip
    judge = {item: _judge_label(study, generation) for item, generation in study.items.items()}
    expected = alt_test(judge=judge, annotations=study.annotations, epsilon=0.15)
    test = row["alt_test"]
    assert list(test) == [
        "omega", "rho", "passed", "tested", "skipped", "annotators", "omega_by_epsilon", "annotators_by_epsilon", "note",
    ]  # fmt: skip
    assert test["skipped"] == [FEW] and test["tested"] == len(ANNOTATORS)
    assert test["annotators"] == expected["annotators"] and test["omega"] == expected["omega"]
    assert test["rho"] == pytest.approx(_rho(study, judge))
    assert list(test["omega_by_epsilon"]) == ["0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30"]
    assert test["omega_by_epsilon"]["0.15"] == test["omega"]


def _rho(study, judge):
    """The judge's mean winning share over the tested annotators, worked out from the definition."""
    shares = []
    for annotator in ANNOTATORS:
        wins = []
        for item, given in study.annotations.items():
            if annotator not in given:
                continue
            others = [label for name, label in given.items() if name != annotator]
            share = Counter(others)
            wins.append(share[judge[item]] >= share[given[annotator]])
        shares.append(np.mean(wins))
    return float(np.mean(shares))


def test_agreement_rows_compare_the_judge_with_people_and_people_with_each_other(study, verdict_report):
    (row,) = verdict_report["judge_verdict"]
    by_against = {agreement["against"]: agreement for agreement in row["agreement"]}
    assert list(by_against) == ["human", *ANNOTATORS, FEW, "human_ceiling"]
    labelled = sorted(item for item in study.items if _human_label(study, item) is not None)
    judge = [_judge_label(study, study.items[item]) for item in labelled]
    human = [_human_label(study, item) for item in labelled]
    assert by_against["human"]["n"] == len(labelled)
    assert by_against["human"]["cohen_kappa"] == pytest.approx(cohen_kappa_score(judge, human, labels=DEFAULT_LABELS))
    # a nominal pool: the scales' figures (docs/domain.md, "Scales") are null
    scales = dict.fromkeys(("weighted_kappa_linear", "weighted_kappa_quadratic", "mae", "rmse"))
    assert by_against["human"] == {
        "against": "human", **chance_corrected(judge, human, categories=DEFAULT_LABELS), **scales
    }  # fmt: skip
    items = sorted(item for item, given in study.annotations.items() if "wim" in given)
    bo = by_against["wim"]
    assert bo["n"] == len(items) and bo["cohen_kappa"] == pytest.approx(
        cohen_kappa_score(
            [_judge_label(study, study.items[i]) for i in items],
            [study.annotations[i]["wim"] for i in items],
            labels=DEFAULT_LABELS,
        )  # fmt: skip
    )
    # the ceiling: the mean over pairs sharing 30 or more items (the fourth annotator shares 10 with each)
    pairs = [
        cohen_kappa_score(
            [study.annotations[i][a] for i in study.items],
            [study.annotations[i][b] for i in study.items],
            labels=DEFAULT_LABELS,
        )  # fmt: skip
        for a, b in combinations(ANNOTATORS, 2)
    ]
    ceiling = by_against["human_ceiling"]
    assert ceiling["n"] == 3 and ceiling["cohen_kappa"] == pytest.approx(np.mean(pairs))


def test_the_selective_threshold_is_the_last_one_of_a_brute_force_binomial_search(study):
    (row,) = report_data(pool=study.pool, verdict=VerdictParameters(alpha=0.25, delta=0.15))["judge_verdict"]
    selective = row["selective"]
    assert list(selective) == [
        "alpha",
        "delta",
        "threshold",
        "coverage",
        "coverage_job",
        "agreement_above",
        "n",
        "curve",
        "needs_confidences",
    ]
    assert selective["needs_confidences"] is False
    labelled = [item for item in study.items if _human_label(study, item) is not None]
    confidence = np.array([_confidence(study, study.items[item]) for item in labelled])
    agree = np.array([_judge_label(study, study.items[i]) == _human_label(study, i) for i in labelled])
    threshold = None
    for lam in sorted(set(confidence), reverse=True):
        kept = confidence >= lam
        if stats.binom.cdf(int((kept & ~agree).sum()), int(kept.sum()), 0.25) > 0.15:
            break
        threshold = lam
    assert threshold is not None and threshold > confidence.min(), "the study's judge should keep some items, not all"
    assert selective["threshold"] == pytest.approx(threshold) and selective["n"] == len(labelled)
    assert selective["coverage"] == pytest.approx(np.mean(confidence >= threshold))
    every = np.array([_confidence(study, generation.pk) for generation in study.generations])
    assert selective["coverage_job"] == pytest.approx(np.mean(every >= threshold))
    assert selective["curve"][0][0] == pytest.approx(np.mean(confidence == confidence.max()))


def test_prediction_powered_rates_take_contexts_as_units(study, verdict_report):
    rows = verdict_report["prediction_powered"]
    assert [(r["model"], r["dataset"], r["pronoun"]) for r in rows] == [
        ("m1", "misgendered", "xe"), ("m1", "misgendered", "he"), ("m1", "misgendered", "all"),
    ]  # fmt: skip
    keys = ["judge", "run", "model", "dataset", "pronoun", "n", "N", "ppi_rate", "ppi_ci", "ci_clipped", "human_rate",
            "human_ci"]  # fmt: skip
    assert list(rows[0]) == [*keys, "judge_rate", "n_eff"]
    # worked out here: a context is (instance, setting); Y the share of its labelled pool samples that people call
    # misgendering, Yhat the judge's mean P(misgendering) over the same samples, Yhat_u over all samples of the others
    by_context = defaultdict(list)
    for generation in study.generations:
        by_context[(generation.instance_id, generation.setting, generation.instance.pronoun)].append(generation.pk)
    item_of = {generation: item for item, generation in study.items.items()}
    for row in rows:
        y, yhat, unlabelled = [], [], []
        for (_, _, pronoun), generations in sorted(by_context.items()):
            if row["pronoun"] not in ("all", pronoun):
                continue
            labelled = [g for g in generations if g in item_of and _human_label(study, item_of[g]) is not None]
            if labelled:
                y.append(np.mean([_human_label(study, item_of[g]) == MISGENDERING for g in labelled]))
                yhat.append(np.mean([_p_misgendering(study, g) for g in labelled]))
            else:
                unlabelled.append(np.mean([_p_misgendering(study, g) for g in generations]))
        expected = ppi_mean(y=y, yhat=yhat, yhat_unlabelled=unlabelled)
        assert (row["n"], row["N"]) == (len(y), len(unlabelled)) == (expected["n"], expected["N"])
        for key in ("ppi_rate", "human_rate", "judge_rate", "n_eff"):
            assert row[key] == pytest.approx(expected[key])
        assert row["ppi_ci"] == pytest.approx(expected["ppi_ci"])
        assert row["human_ci"] == pytest.approx(expected["human_ci"])
    assert rows[-1]["n"] == 2 * 16 and rows[-1]["N"] == 2 * 4


def test_a_pool_run_on_a_pool_without_a_job_gives_rates_over_the_pools_contexts(judge, judged_pool):
    # docs/domain.md, "Bring your own study": without a job, the units are the pool's contexts; here the judged item's
    # context has no human label, so it is the one unlabelled unit and no PPI estimate can be made.
    from tests.judging.conftest import finished_run

    pool, items = judged_pool
    scores = {"correct": -1.0, "misgendering": -3.0, "no_pronoun": -4.0}
    finished_run(judge=judge, pool=pool, labels={items[0]: ("correct", 0.9, scores)})
    report = report_data(pool=pool)
    (row,) = report["judge_verdict"]
    assert row["alt_test"]["omega"] is None and "not run" in row["alt_test"]["note"]
    assert row["selective"]["coverage_job"] is None
    weights = np.exp(np.array(list(scores.values())) - max(scores.values()))
    p_misgendering = float(weights[1] / weights.sum())
    rows = report["prediction_powered"]
    assert [(r["pronoun"], r["n"], r["N"], r["ppi_rate"]) for r in rows] == [("xe", 0, 1, None), ("all", 0, 1, None)]
    assert rows[0]["judge_rate"] == pytest.approx(p_misgendering)


def test_out_of_range_parameters_are_refused_and_nothing_is_cached(study, client, researcher):
    cache.clear()
    with pytest.raises(CommandError, match="epsilon"):
        call_command("report", pool=study.pool.name, format="json", epsilon=1.0)
    with pytest.raises(ValueError, match="alpha"):
        report_build(pool=study.pool, alpha=0.0)
    client.force_login(researcher)
    for query in ("epsilon=-0.1", "alpha=1", "delta=0", "delta=abc"):
        response = client.get(f"/api/reports/{study.pool.name}/?{query}")
        assert response.status_code == 400, query
        assert query.split("=")[0] in response.json()
    assert not report_is_cached(pool=study.pool)
    response = client.get(f"/api/reports/{study.pool.name}/?epsilon=0.2&alpha=0.3&delta=0.2")
    assert response.status_code == 200
    (row,) = response.json()["judge_verdict"]
    assert row["epsilon"] == 0.2 and (row["selective"]["alpha"], row["selective"]["delta"]) == (0.3, 0.2)
    assert report_is_cached(pool=study.pool, epsilon=0.2, alpha=0.3, delta=0.2)
    assert not report_is_cached(pool=study.pool)
    assert math.isclose(row["alt_test"]["omega_by_epsilon"]["0.20"] or 0, row["alt_test"]["omega"] or 0)


def test_the_verdict_rows_have_exactly_the_keys_their_types_name(verdict_report):
    from typing import get_type_hints

    from analysis.report.machine_types import (
        AltTestAnnotatorRow,
        AltTestResult,
        JudgeVerdictRow,
        PredictionPoweredRow,
        SelectiveResult,
        VerdictAgreementRow,
    )

    report = verdict_report
    (row,) = report["judge_verdict"]
    assert set(row) == set(get_type_hints(JudgeVerdictRow))
    assert set(row["alt_test"]) == set(get_type_hints(AltTestResult))
    assert all(set(a) == set(get_type_hints(AltTestAnnotatorRow)) for a in row["alt_test"]["annotators"])
    assert all(set(a) == set(get_type_hints(VerdictAgreementRow)) for a in row["agreement"])
    assert set(row["selective"]) == set(get_type_hints(SelectiveResult))
    assert all(set(r) == set(get_type_hints(PredictionPoweredRow)) for r in report["prediction_powered"])


def test_the_exports_carry_the_verdict_and_the_rates(verdict_report):
    import csv
    import io

    from analysis.report.exports.csv import CSV_TABLES, report_csv
    from analysis.report.exports.latex import report_latex

    report = verdict_report
    (row,) = report["judge_verdict"]
    assert {"judge_verdict", "judge_verdict_agreement", "judge_verdict_annotators", "prediction_powered"} <= set(
        CSV_TABLES
    )
    (summary,) = csv.DictReader(io.StringIO(report_csv(report=report, table="judge_verdict")))
    assert summary["run"] == str(row["run"]) and summary["skipped"] == FEW
    assert float(summary["omega_0.15"]) == pytest.approx(row["alt_test"]["omega"])  # three annotators: it ran
    assert summary["selective_coverage_job"] == str(row["selective"]["coverage_job"])
    agreement = list(csv.DictReader(io.StringIO(report_csv(report=report, table="judge_verdict_agreement"))))
    assert [r["against"] for r in agreement] == [a["against"] for a in row["agreement"]]
    assert "per_class_kappa_misgendering" in agreement[0] and "cohen_kappa_boot_ci_low" in agreement[0]
    rates = list(csv.DictReader(io.StringIO(report_csv(report=report, table="prediction_powered"))))
    assert len(rates) == 3 and {"ppi_ci_low", "ppi_ci_high", "n_eff"} <= set(rates[0])
    latex = report_latex(report=report)
    assert "The judge's verdict" in latex and "PPI++" in latex
