"""The stereotype pair report (docs/domain.md, 'Stereotype pair benchmarks'; the seed's Tables 4-6 and Figure 2):
each model's bias score on each benchmark, the benchmarks' agreement over models (overall, balanced over the
dimensions, per dimension), and each benchmark's mix of dimensions from a pool's human labels.

A scored model is named by its model name; one scored by several methods (pll and pll-word-l2r, say) appears once
per method, as `model (method)`, unless the report keeps one method.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from analysis.metrics.pairs import balanced_score, benchmark_agreement, bias_score, pair_dimension
from annotation.models import STUDY, Annotation, Pool, PoolItem
from annotation.schema import DIMENSION_PRECEDENCE, DIMENSIONS, label_guideline
from common.errors import ServiceError
from generation.models import PairScore
from generation.selectors import pair_datasets


class PairReportError(ServiceError, ValueError):
    """The report cannot be built as asked (unknown datasets, more than two benchmarks to compare)."""


def pair_dimensions(*, pool: Pool) -> dict[int, str]:
    """Pair id -> its dimension in the pool: the adjudicated label, else the label most annotators gave, ties to the
    dimension the guideline prefers (roles > attitudes > personality > physical)."""
    items = PoolItem.objects.filter(pool=pool, kind=STUDY, pair__isnull=False)
    given: dict[int, list[str]] = defaultdict(list)
    for item_id, label in (
        Annotation.objects.filter(item__in=items).order_by("created_at", "pk").values_list("item_id", "label")
    ):
        given[item_id].append(label)
    dimensions: dict[int, str] = {}
    for item_id, pair_id, adjudicated in items.values_list("pk", "pair_id", "adjudication__label"):
        dimension = pair_dimension(adjudicated=adjudicated, labels=given[item_id], precedence=DIMENSION_PRECEDENCE)
        if dimension in DIMENSIONS:
            dimensions[pair_id] = dimension
    return dimensions


def _chosen_datasets(names: list[str] | None) -> list[str]:
    known = pair_datasets()
    if names:
        unknown = [name for name in names if name not in known]
        if unknown:
            raise PairReportError(
                f"not a dataset of pairs: {', '.join(unknown)}; known: {', '.join(known) or 'none imported yet'}"
            )
        return list(dict.fromkeys(names))
    scored = set(PairScore.objects.values_list("pair__dataset__name", flat=True).distinct())
    return [name for name in known if name in scored]


def pair_report(
    *, datasets: list[str] | None = None, dimensions_pool: Pool | None = None, method: str | None = None
) -> dict[str, Any]:
    """The report as one JSON-ready dict (see the module docstring). `datasets`: the benchmarks (default every
    dataset of pairs with scores); agreement compares two of them, so more than two need naming."""
    chosen = _chosen_datasets(datasets)
    if len(chosen) > 2:
        raise PairReportError(
            f"agreement compares two benchmarks and {len(chosen)} have scores ({', '.join(chosen)}): "
            "name two with --datasets A,B"
        )
    rows = PairScore.objects.filter(pair__dataset__name__in=chosen)
    if method:
        rows = rows.filter(method=method)
    values = list(
        rows.values_list("model", "method", "pair_id", "pair__dataset__name", "score_stereotypical",
                         "score_anti_stereotypical")
    )  # fmt: skip
    methods: dict[str, set[str]] = defaultdict(set)
    for model, how, *_ in values:
        methods[model].add(how)
    scorers = {(m, how): m if len(methods[m]) == 1 else f"{m} ({how})" for m in methods for how in methods[m]}
    dimensions = pair_dimensions(pool=dimensions_pool) if dimensions_pool is not None else {}
    scores: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    by_dimension: dict[str, dict[str, dict[str, list[tuple[float, float]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for model, how, pair_id, dataset, stereo, anti in values:
        scorer = scorers[model, how]
        scores[scorer][dataset].append((stereo, anti))
        if pair_id in dimensions:
            by_dimension[scorer][dataset][dimensions[pair_id]].append((stereo, anti))
    names = sorted(scores)
    bias_detail = {s: {d: bias_score(scores[s][d]) for d in chosen if d in scores[s]} for s in names}
    bias = {s: {d: detail["score"] for d, detail in bias_detail[s].items()} for s in names}
    per_dimension = {
        s: {d: {dim: bias_score(by_dimension[s][d][dim])["score"] for dim in DIMENSIONS} for d in bias[s]}
        for s in names
    }
    balanced = {s: {d: balanced_score(per_dimension[s][d]) for d in per_dimension[s]} for s in names}
    return {
        "datasets": chosen,
        "method": method,
        "models": {scorers[key]: {"model": key[0], "method": key[1]} for key in sorted(scorers)},
        "bias": bias,
        "bias_detail": bias_detail,
        "bias_balanced": balanced if dimensions_pool is not None else {},
        "bias_by_dimension": per_dimension if dimensions_pool is not None else {},
        "agreement": _agreement(chosen, bias, balanced, per_dimension, has_dimensions=dimensions_pool is not None),
        "dimensions_pool": dimensions_pool.name if dimensions_pool is not None else None,
        **_dimension_mix(chosen, dimensions, dimensions_pool),
    }


def _side(scores: dict[str, dict[str, float | None]], dataset: str) -> dict[str, float | None]:
    return {scorer: by_dataset.get(dataset) for scorer, by_dataset in scores.items()}


def _agreement(chosen: list[str], bias, balanced, per_dimension, *, has_dimensions: bool) -> dict[str, Any]:
    """Spearman's rho over models between the two benchmarks: overall, balanced and per dimension (the last two only
    with a dimensions pool; else undefined)."""
    first, second = (chosen + ["", ""])[:2]
    undefined = {"rho": None, "p_value": None, "n_models": 0}
    overall = benchmark_agreement(_side(bias, first), _side(bias, second)) if len(chosen) == 2 else undefined
    if not has_dimensions or len(chosen) != 2:
        return {
            "datasets": chosen,
            "overall": overall,
            "balanced": dict(undefined),
            "by_dimension": {d: dict(undefined) for d in DIMENSIONS},
        }

    def dimension_side(dataset: str, dimension: str) -> dict[str, float | None]:
        return {s: per_dimension[s].get(dataset, {}).get(dimension) for s in per_dimension}

    return {
        "datasets": chosen,
        "overall": overall,
        "balanced": benchmark_agreement(_side(balanced, first), _side(balanced, second)),
        "by_dimension": {
            d: benchmark_agreement(dimension_side(first, d), dimension_side(second, d)) for d in DIMENSIONS
        },
    }


def _dimension_mix(chosen: list[str], dimensions: dict[int, str], pool: Pool | None) -> dict[str, Any]:
    """Each benchmark's share of its labelled pairs per dimension (the seed's Figure 2), and the counts."""
    if pool is None:
        return {"dimensions": {}, "dimension_counts": {}}
    counts: dict[str, dict[str, int]] = {d: dict.fromkeys(DIMENSIONS, 0) for d in chosen}
    items = PoolItem.objects.filter(pool=pool, kind=STUDY, pair__isnull=False, pair__dataset__name__in=chosen)
    for pair_id, dataset in items.values_list("pair_id", "pair__dataset__name"):
        if pair_id in dimensions:
            counts[dataset][dimensions[pair_id]] += 1
    shares = {
        d: {dim: (n / sum(c.values()) if sum(c.values()) else None) for dim, n in c.items()} for d, c in counts.items()
    }
    return {"dimensions": shares, "dimension_counts": counts}


def pair_report_rows(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The pair report's page tables (templates/analysis/pair_report.html): `bias_rows` (a model's score, ties and
    balanced score per dataset), `agreement_rows` (original, balanced, then per dimension) and `dimension_rows` (a
    dimension's count and share in percent per dataset; none without a dimensions pool)."""
    agreement = report["agreement"]
    return {
        "bias_rows": [
            {"model": model, "cells": [
                {"score": report["bias"][model].get(d), "ties": report["bias_detail"][model].get(d, {}).get("ties"),
                 "balanced": report["bias_balanced"].get(model, {}).get(d)} for d in report["datasets"]]}
            for model in report["bias"]
        ],
        "agreement_rows": [{"name": "Original", "value": agreement["overall"]},
                           {"name": "Balanced", "value": agreement["balanced"]}]
        + [{"name": label_guideline(d)["name"], "value": agreement["by_dimension"][d]} for d in DIMENSIONS],
        "dimension_rows": [
            {"name": label_guideline(dim)["name"], "cells": [
                {"count": report["dimension_counts"][d][dim],
                 "share": None if report["dimensions"][d][dim] is None else 100 * report["dimensions"][d][dim]}
                for d in report["datasets"]]}
            for dim in DIMENSIONS
        ] if report["dimensions"] else [],
    }  # fmt: skip
