"""Rankings across benchmarks (docs/domain.md, 'Rankings across benchmarks'): Kendall's tau between the models'
accuracies for every pair of (dataset, method), checked against scipy on accuracies worked out here from 0/1 counts."""

from __future__ import annotations

import itertools

import pytest
from scipy.stats import kendalltau

from analysis.report.exports.render import report_render
from analysis.selectors.rankings import ranking_agreement

MODELS = ["m1", "m2", "m3", "m4", "m5", "m6"]
# (dataset, model, pronoun) -> (probability hits, heuristic hits, human hits) out of (n_prob, n_gen, n_human)
N = {"he": (10, 50, 4), "ey": (30, 150, 12)}


def hits(dataset: str, model: int, pronoun: str) -> tuple[int, int, int]:
    """Made-up counts: each method orders the models a little differently, and the pronouns differ in size."""
    n_prob, n_gen, n_human = N[pronoun]
    shift = 0 if dataset == "mine" else 2
    return (
        min(n_prob, (model * 3 + shift) % (n_prob + 1)),
        min(n_gen, (model * 17 + 5 * shift + (pronoun == "ey")) % (n_gen + 1)),
        min(n_human, (5 - model + shift) % (n_human + 1) + (pronoun == "he")),
    )


def accuracy_rows(models=MODELS, datasets=("mine", "ruff")) -> list[dict]:
    rows = []
    for dataset in datasets:
        for m, model in enumerate(models):
            for pronoun, (n_prob, n_gen, n_human) in N.items():
                prob, gen, human = hits(dataset, m, pronoun)
                rows.append(
                    {
                        "model": model,
                        "dataset": dataset,
                        "setting": "pre",
                        "pronoun": pronoun,
                        "prob": prob / n_prob,
                        "prob_n": n_prob,
                        "gen": gen / n_gen,
                        "gen_n": n_gen,
                        "human": human / n_human,
                        "human_n": n_human,
                        "prob_score": "sum" if dataset == "mine" else "mean",
                    }
                )
    return rows


def pooled(dataset: str, method: int) -> list[float]:
    """Each model's accuracy over the whole dataset: all its hits over all its values."""
    result = []
    for m in range(len(MODELS)):
        total_hits = sum(hits(dataset, m, pronoun)[method] for pronoun in N)
        total = sum(N[pronoun][method] for pronoun in N)
        result.append(total_hits / total)
    return result


def test_every_pair_of_dataset_and_method_gets_scipys_exact_tau():
    rows = ranking_agreement(accuracy=accuracy_rows())

    sides = [(d, method) for d in ("mine", "ruff") for method in range(3)]
    assert len(rows) == len(list(itertools.combinations(sides, 2))) == 15
    labels = {0: "probability accuracy", 1: "heuristic accuracy", 2: "human accuracy"}
    for row, (a, b) in zip(rows, itertools.combinations(sides, 2), strict=True):
        x, y = pooled(*a), pooled(*b)
        assert (row["dataset_a"], row["dataset_b"], row["n_models"]) == (a[0], b[0], 6)
        assert row["method_a"].startswith(labels[a[1]]) and row["method_b"].startswith(labels[b[1]])
        ties = len(set(x)) < 6 or len(set(y)) < 6
        expected = kendalltau(x, y, method="asymptotic" if ties else "exact")
        assert row["p_method"] == ("asymptotic" if ties else "exact")
        assert row["tau"] == pytest.approx(expected.statistic)
        assert row["p_value"] == pytest.approx(expected.pvalue)
    assert any(row["p_method"] == "exact" for row in rows)


def test_probability_accuracy_is_labelled_with_the_jobs_scoring():
    rows = ranking_agreement(accuracy=accuracy_rows())

    assert rows[0]["method_a"] == "probability accuracy (sum)"  # mine's jobs scored by summed log-probability
    assert {row["method_b"] for row in rows if row["dataset_b"] == "ruff"} >= {"probability accuracy (mean)"}


def test_fewer_than_three_shared_models_give_no_tau_and_say_so():
    rows = ranking_agreement(accuracy=accuracy_rows(models=["m1", "m2"]))

    assert rows and all(row["tau"] is None and row["p_value"] is None for row in rows)
    assert all(row["n_models"] == 2 and "fewer than 3 shared models" in row["note"] for row in rows)


def test_only_the_models_both_sides_have_are_ranked():
    rows = [r for r in accuracy_rows() if not (r["dataset"] == "ruff" and r["model"] in ("m1", "m2"))]

    result = ranking_agreement(accuracy=rows)

    across = [row for row in result if row["dataset_a"] != row["dataset_b"]]
    assert all(row["n_models"] == 4 for row in across)
    within = [row for row in result if row["dataset_a"] == row["dataset_b"] == "mine"]
    assert all(row["n_models"] == 6 for row in within)


def test_the_table_goes_to_csv_and_latex_with_the_significance_note(study_report):
    report = {**study_report, "ranking_agreement": ranking_agreement(accuracy=accuracy_rows())}

    csv_body = report_render(report=report, fmt="csv", table="ranking_agreement").body
    latex = report_render(report=report, fmt="latex", table="ranking_agreement").body

    assert csv_body.splitlines()[0].startswith("dataset_a,method_a,dataset_b,method_b,n_models,tau,p_value")
    assert len(csv_body.strip().splitlines()) == 16
    assert r"\tau \geq 0.87" in latex and "significant at 0.05" in latex


def test_the_report_has_the_table(study_report):
    """The hand-built study has one model: every pair says it has too few models to rank."""
    rows = study_report["ranking_agreement"]

    pairs = {(row["method_a"], row["method_b"]) for row in rows}
    assert pairs == {
        ("probability accuracy (mean)", "heuristic accuracy"),
        ("probability accuracy (mean)", "human accuracy"),
        ("heuristic accuracy", "human accuracy"),
    }
    assert all(row["n_models"] == 1 and row["tau"] is None for row in rows)


def test_the_accuracy_rows_and_table_name_the_jobs_probability_scoring(study_report):
    assert {row["prob_score"] for row in study_report["accuracy"]} == {"mean"}

    latex = report_render(report=study_report, fmt="latex", table="accuracy").body

    assert "Probability scoring: mean token loss." in latex
