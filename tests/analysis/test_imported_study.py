"""Every figure of a study brought from elsewhere (docs/domain.md, "Bring your own study") against independent
computations: a pool with the two-label set `misgendering, correct`, three annotators' labels imported from a file,
and an API judge's labels imported with probabilities. Its statistics use the pool's two labels as categories
(statsmodels, scikit-learn, irrCAC with `categories=`), the judge's verdict is the Alternative Annotator Test's
reference procedure's, its calibration is recomputed here, and its prediction-powered rates, over the pool's
contexts (the pool has no job), are ppi_py 0.2.3's."""

from __future__ import annotations

import io
import json
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from irrCAC.raw import CAC
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from annotation.services.label_import import imported_username
from tests.analysis.test_verdict_metrics import _reference_alt_test, ppi_py  # noqa: F401  (ppi_py: a fixture)
from tests.annotation.imported_study import ANNOTATORS, LABELS, build_pool, write_judge, write_long

pytestmark = pytest.mark.django_db


def _command(name: str, *args) -> dict:
    out = io.StringIO()
    call_command(name, *map(str, args), stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.fixture(scope="module")
def built(module_db, tmp_path_factory):
    from analysis.report.build import report_data

    folder = tmp_path_factory.mktemp("byo")
    with module_db():
        study = build_pool()
        _command("import_labels", write_long(study, folder / "people.csv"), "--pool", study.pool.name)
        run = _command(
            "import_judge_labels", write_judge(study, folder / "judge.csv"), "--pool", study.pool.name,
            "--judge", "api-judge", "--model-id", "gpt-4o",
        )["run"]  # fmt: skip
        return study, run, report_data(pool=study.pool)


def _majority(given: dict[str, str]) -> str | None:
    counts = pd.Series(list(given.values())).value_counts()
    return None if len(counts) > 1 and counts.iloc[0] == counts.iloc[1] else str(counts.index[0])


def test_the_report_uses_the_pools_two_labels(built):
    _, _, report = built
    assert report["labels"] == LABELS


def test_fleiss_kappa_and_gwets_ac1_are_statsmodels_and_irrcacs_over_the_pools_labels(built):
    study, _, report = built
    block = report["inter_annotator"]["pronoun_label"]
    ratings = np.array([[given[name] for name in ANNOTATORS] for given in study.people.values()], dtype=object)
    table, _ = aggregate_raters(ratings)
    assert block["fleiss_kappa"] == pytest.approx(float(sm_fleiss_kappa(table, method="fleiss")))
    frame = pd.DataFrame(ratings, columns=list(ANNOTATORS))
    expected = CAC(frame, categories=LABELS).gwet()["est"]["coefficient_value"]
    assert block["gwet_ac1"] == pytest.approx(float(expected), abs=1e-5)
    # with three categories (the schema's default) AC1's chance agreement would differ: the pool's set counts
    three = CAC(frame, categories=[*LABELS, "no_pronoun"]).gwet()["est"]["coefficient_value"]
    assert block["gwet_ac1"] != pytest.approx(float(three), abs=1e-5)


def _verdict(report: dict, run: int) -> dict:
    (row,) = [row for row in report["judge_verdict"] if row["run"] == run]
    return row


def test_the_judges_agreement_with_people_is_scikit_learns_and_irrcacs(built):
    study, run, report = built
    human = {item: _majority(given) for item, given in study.people.items()}
    labelled = [item for item in study.items if human.get(item) is not None]
    judge = [study.judge[item] for item in labelled]
    people = [human[item] for item in labelled]
    (row,) = [a for a in _verdict(report, run)["agreement"] if a["against"] == "human"]
    assert row["n"] == len(labelled)
    assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(judge, people, labels=LABELS))
    frame = pd.DataFrame({"judge": judge, "human": people})
    ac1 = CAC(frame, categories=LABELS).gwet()["est"]["coefficient_value"]
    assert row["gwet_ac1"] == pytest.approx(float(ac1), abs=1e-5)
    for label in LABELS:
        expected = cohen_kappa_score([x == label for x in judge], [y == label for y in people])
        assert row["per_class_kappa"][label] == pytest.approx(expected)
    assert set(row["per_class_kappa"]) == set(LABELS)


def test_the_alternative_annotator_test_is_the_reference_procedures(built):
    study, run, report = built
    humans: dict[str, dict[str, str]] = defaultdict(dict)
    for item, given in study.people.items():
        for name, label in given.items():
            humans[imported_username(study.pool, name)][item] = label
    expected = _reference_alt_test(dict(study.judge), dict(humans), epsilon=0.15)
    test = _verdict(report, run)["alt_test"]
    assert test["tested"] == len(ANNOTATORS)
    assert test["omega"] == pytest.approx(expected["winning_rate"])
    assert test["rho"] == pytest.approx(expected["advantage_prob"])
    for annotator in test["annotators"]:
        reference = expected["annotators"][annotator["annotator"]]
        assert annotator["p_value"] == pytest.approx(reference["p"], rel=1e-12)
        assert annotator["rejected"] == reference["rejected"]


def test_calibration_is_the_ece_and_brier_score_of_the_imported_probabilities(built):
    study, _, report = built
    (row,) = [r for r in report["judge_calibration"] if r["judge"] == "api-judge" and r["model"] is None]
    human = {item: _majority(given) for item, given in study.people.items()}
    items = [item for item in study.items if human.get(item) is not None]
    confidence = np.array([max(study.probabilities[item].values()) for item in items])
    correct = np.array([float(study.judge[item] == human[item]) for item in items])
    bins = np.minimum((confidence * 10).astype(int), 9)
    ece = sum(
        (bins == b).sum() / len(items) * abs(correct[bins == b].mean() - confidence[bins == b].mean())
        for b in range(10)
        if (bins == b).any()
    )
    assert row["n"] == len(items)
    assert row["ece"] == pytest.approx(ece)
    assert row["brier"] == pytest.approx(float(np.mean((confidence - correct) ** 2)))
    multiclass = [
        sum((study.probabilities[item][label] - float(label == human[item])) ** 2 for label in LABELS) for item in items
    ]
    assert row["brier_multiclass"] == pytest.approx(float(np.mean(multiclass)))


def test_prediction_powered_rates_over_the_pools_contexts_are_ppi_pys(built, ppi_py):  # noqa: F811
    study, run, report = built
    human = {item: _majority(given) for item, given in study.people.items()}
    rows = [row for row in report["prediction_powered"] if row["run"] == run]
    assert {(row["model"], row["pronoun"]) for row in rows} == {
        (model, pronoun) for model in ("model-x", "model-y") for pronoun in ("he", "xe", "all")
    }
    for row in rows:
        contexts: dict[tuple, list[str]] = defaultdict(list)
        for item, (model, pronoun, _) in study.context_of.items():
            if model == row["model"] and row["pronoun"] in (pronoun, "all"):
                contexts[study.context_of[item]].append(item)
        y, yhat, yhat_u = [], [], []
        for _, items in sorted(contexts.items()):
            p = [study.probabilities[item]["misgendering"] for item in items]
            people = [item for item in items if human.get(item) is not None]
            if people:
                y.append(np.mean([human[item] == "misgendering" for item in people]))
                yhat.append(np.mean([study.probabilities[item]["misgendering"] for item in people]))
            else:
                yhat_u.append(np.mean(p))
        y, yhat, yhat_u = np.array(y), np.array(yhat), np.array(yhat_u)
        assert (row["n"], row["N"]) == (len(y), len(yhat_u))
        estimate = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=None)))
        low, high = (float(np.squeeze(x)) for x in ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, lam=None))
        assert row["ppi_rate"] == pytest.approx(estimate, abs=1e-9)
        assert row["ppi_ci"] == pytest.approx([low, high], abs=1e-9)
        assert row["human_ci"] == pytest.approx([float(x) for x in ppi_py.classical_mean_ci(y, alpha=0.05)])


def test_a_judge_without_confidences_gets_agreement_but_selective_judging_says_it_needs_them(built, tmp_path):
    from analysis.report.build import report_data
    from analysis.selectors.verdict import selective_sentence

    study, _, _ = built
    run = _command(
        "import_judge_labels", write_judge(study, tmp_path / "bare.csv", kind="none"), "--pool", study.pool.name,
        "--judge", "bare-judge",
    )["run"]  # fmt: skip
    report = report_data(pool=study.pool)
    row = _verdict(report, run)
    assert row["selective"]["needs_confidences"] and row["selective"]["threshold"] is None
    assert selective_sentence(row).startswith("Selective judging needs confidences")
    assert row["alt_test"]["tested"] == len(ANNOTATORS)
    assert not [r for r in report["judge_calibration"] if r["judge"] == "bare-judge"]
    # its rates take Yhat = 1[label = misgendering]
    (rate,) = [r for r in report["prediction_powered"] if r["run"] == run and r["model"] == "model-x"
               and r["pronoun"] == "xe"]  # fmt: skip
    judged = [1.0 if study.judge[item] == "misgendering" else 0.0 for item, (m, p, _) in study.context_of.items()
              if m == "model-x" and p == "xe"]  # fmt: skip
    assert rate["judge_rate"] == pytest.approx(float(np.mean(judged)))


def test_a_label_nobody_used_is_still_a_category(db, tmp_path):
    from analysis.report.build import report_data

    study = build_pool(name="byo-three", labels=[*LABELS, "plural_they"])
    _command("import_labels", write_long(study, tmp_path / "people.csv"), "--pool", study.pool.name)
    block = report_data(pool=study.pool)["inter_annotator"]["pronoun_label"]
    frame = pd.DataFrame([[given[name] for name in ANNOTATORS] for given in study.people.values()])
    expected = CAC(frame, categories=[*LABELS, "plural_they"]).gwet()["est"]["coefficient_value"]
    assert block["gwet_ac1"] == pytest.approx(float(expected), abs=1e-5)


def test_the_report_and_quality_pages_show_the_imported_study(built, researcher):
    from django.test import Client

    study, _, _ = built
    client = Client()
    client.force_login(researcher)
    report = client.get(f"/reports/{study.pool.name}/")
    assert report.status_code == 200 and b"api-judge" in report.content
    quality = client.get(f"/pools/{study.pool.name}/quality/")
    assert quality.status_code == 200 and b"imported.byo.ann-a" in quality.content


def test_a_pool_whose_positive_label_is_its_own_counts_that_label(db, tmp_path):
    """A set without `misgendering` ("misgendered, fine") names its positive label: the binary views and the rates
    count it (0 iff the positive label, as the heuristic's 0 is a misgendering)."""
    from analysis.report.build import report_data
    from annotation.models import Pool

    study = build_pool(name="byo-own")
    rename = {"misgendering": "misgendered", "correct": "fine"}
    Pool.objects.filter(pk=study.pool.pk).update(labels=list(rename.values()), positive_label="misgendered")
    study.pool.refresh_from_db()
    people = tmp_path / "people.csv"
    people.write_text(
        "item,annotator,label\n"
        + "".join(
            f"{item},{name},{rename[label]}\n" for item, given in study.people.items() for name, label in given.items()
        ),
        encoding="utf-8",
    )
    judge = tmp_path / "judge.csv"
    judge.write_text(
        "item,label,confidence\n" + "".join(f"{item},{rename[label]},0.9\n" for item, label in study.judge.items()),
        encoding="utf-8",
    )
    _command("import_labels", people, "--pool", study.pool.name)
    run = _command("import_judge_labels", judge, "--pool", study.pool.name, "--judge", "own-judge")["run"]
    report = report_data(pool=study.pool)

    human = {item: _majority(given) for item, given in study.people.items()}
    binary = [[0 if given[name] == "misgendering" else 1 for name in ANNOTATORS] for given in study.people.values()]
    table, _ = aggregate_raters(np.array(binary))
    assert report["inter_annotator"]["pronoun_binary"]["fleiss_kappa"] == pytest.approx(
        float(sm_fleiss_kappa(table, method="fleiss"))
    )
    rows = [
        r for r in report["prediction_powered"] if r["run"] == run and r["model"] == "model-x" and r["pronoun"] == "xe"
    ]
    labelled = [i for i, (m, p, _) in study.context_of.items() if m == "model-x" and p == "xe" and i in human]
    assert rows and rows[0]["human_rate"] is not None
    by_context: dict[tuple, list[float]] = defaultdict(list)
    for item in labelled:
        by_context[study.context_of[item]].append(float(human[item] == "misgendering"))
    assert rows[0]["human_rate"] == pytest.approx(float(np.mean([np.mean(v) for v in by_context.values()])))
