"""Rankings across benchmarks (docs/domain.md, 'Rankings across benchmarks'): do two datasets, or two methods on one
dataset, order the models alike? Kendall's tau between the models' accuracies, over the models both sides have."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any, cast

from analysis.metrics.agreement import finite
from analysis.report.types import RankingAgreementRow

# The accuracy columns of the report's `accuracy` rows that rank models, each with the column that counts its values.
METHODS = {
    "prob": ("probability accuracy", "prob_n"),
    "gen": ("heuristic accuracy", "gen_n"),
    "human": ("human accuracy", "human_n"),
}
MIN_MODELS = 3
SIGNIFICANCE_NOTE = "with 6 models, only tau >= 0.87 is significant at 0.05 (exact test)"


def model_accuracies(*, accuracy: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    """(dataset, method) -> model -> the model's accuracy over the dataset: the cells' accuracies (every pronoun and
    setting) weighted by their counts, i.e. the share over all the values the cells hold."""
    totals: dict[tuple[str, str], dict[str, list[float]]] = {}
    for row in accuracy:
        for method, (_, count) in METHODS.items():
            value, n = row.get(method), row.get(count) or 0
            if value is None or not n:
                continue
            sums = totals.setdefault((row["dataset"], method), {}).setdefault(row["model"], [0.0, 0.0])
            sums[0] += value * n
            sums[1] += n
    return {key: {model: s / n for model, (s, n) in models.items()} for key, models in totals.items()}


def _method_label(method: str, prob_scores: set[str]) -> str:
    """The method as the table says it; probability accuracy names its scoring (mean or sum, the jobs' prob_score)."""
    label = METHODS[method][0]
    return f"{label} ({', '.join(sorted(prob_scores))})" if method == "prob" and prob_scores else label


def ranking_agreement(*, accuracy: Sequence[Mapping[str, Any]]) -> list[RankingAgreementRow]:
    """One row per pair of (dataset, method): Kendall's tau between the models' rankings with its p-value and the
    number of shared models. Exact p-value (scipy's `method="exact"`); tied accuracies make the exact test
    inapplicable, so such a pair gets the asymptotic p-value, marked in `p_method`. With fewer than MIN_MODELS shared
    models, or a side whose models all tie, the row gives no tau and says why in `note`."""
    scores = model_accuracies(accuracy=accuracy)
    prob_scores: dict[str, set[str]] = {}
    for row in accuracy:
        if row.get("prob") is not None and row.get("prob_score"):
            prob_scores.setdefault(row["dataset"], set()).update(str(row["prob_score"]).split(", "))
    order = list(METHODS)
    keys = sorted(scores, key=lambda key: (key[0], order.index(key[1])))
    rows = []
    for a, b in combinations(keys, 2):
        shared = sorted(set(scores[a]) & set(scores[b]))
        row = {
            "dataset_a": a[0],
            "method_a": _method_label(a[1], prob_scores.get(a[0], set())),
            "dataset_b": b[0],
            "method_b": _method_label(b[1], prob_scores.get(b[0], set())),
            "n_models": len(shared),
            "tau": None,
            "p_value": None,
            "p_method": None,
            "note": "",
        }
        x, y = [scores[a][m] for m in shared], [scores[b][m] for m in shared]
        if len(shared) < MIN_MODELS:
            row["note"] = f"fewer than {MIN_MODELS} shared models ({len(shared)}): no tau"
        elif len(set(x)) < 2 or len(set(y)) < 2:
            row["note"] = "every model has the same accuracy on one side: tau undefined"
        else:
            ties = len(set(x)) < len(x) or len(set(y)) < len(y)
            method = "asymptotic" if ties else "exact"
            from scipy.stats import kendalltau  # where it is used: see analysis/metrics/agreement.py

            result = kendalltau(x, y, method=method)
            row |= {"tau": finite(result.statistic), "p_value": finite(result.pvalue), "p_method": method}
            row["note"] = "tied accuracies: asymptotic p-value" if ties else ""
        rows.append(row)
    return cast(list[RankingAgreementRow], rows)
