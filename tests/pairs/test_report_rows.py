"""The pair report page's tables are built by the selector (analysis/selectors/pairs.py, `pair_report_rows`); the
view only renders them."""

from __future__ import annotations

from analysis.selectors.pairs import pair_report_rows
from annotation.schema import DIMENSIONS, label_guideline


def _report(dimensions: bool) -> dict:
    return {
        "datasets": ["crows", "winobias"],
        "bias": {"m": {"crows": 0.5, "winobias": None}},
        "bias_detail": {"m": {"crows": {"ties": 2}}},
        "bias_balanced": {"m": {"crows": 0.25}},
        "agreement": {"overall": 0.9, "balanced": 0.8, "by_dimension": {d: i / 10 for i, d in enumerate(DIMENSIONS)}},
        "dimensions": {"crows": dict.fromkeys(DIMENSIONS, 0.5), "winobias": dict.fromkeys(DIMENSIONS)}
        if dimensions
        else {},
        "dimension_counts": {"crows": dict.fromkeys(DIMENSIONS, 3), "winobias": dict.fromkeys(DIMENSIONS, 0)},
    }


def test_the_pair_report_rows_hold_each_models_scores_the_agreements_and_the_dimension_mix():
    rows = pair_report_rows(_report(dimensions=True))
    assert rows["bias_rows"] == [
        {
            "model": "m",
            "cells": [
                {"score": 0.5, "ties": 2, "balanced": 0.25},
                {"score": None, "ties": None, "balanced": None},
            ],
        }
    ]
    names = [label_guideline(d)["name"] for d in DIMENSIONS]
    assert [row["name"] for row in rows["agreement_rows"]] == ["Original", "Balanced", *names]
    assert [row["value"] for row in rows["agreement_rows"]] == [0.9, 0.8, *(i / 10 for i in range(len(DIMENSIONS)))]
    assert [row["name"] for row in rows["dimension_rows"]] == names
    assert rows["dimension_rows"][0]["cells"] == [{"count": 3, "share": 50.0}, {"count": 0, "share": None}]
    assert pair_report_rows(_report(dimensions=False))["dimension_rows"] == []
