"""The stereotype pair report (analysis/selectors/pairs.py) as CSV (one long table: every figure a row) and LaTeX
(the seed's Tables 4-6: the agreement, the agreement per dimension, and each model's scores before and after
balancing)."""

from __future__ import annotations

import io
import json

from analysis.report.exports.tex import _fmt, latex_table
from annotation.schema import DIMENSIONS, label_guideline
from common.safe_csv import SafeWriter

PAIR_CSV_COLUMNS = ["table", "model", "dataset", "dimension", "statistic", "value"]


def _number(value) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def pair_report_csv(report: dict) -> str:
    """Every figure of the report as a row: `bias` (score, pairs, stereotypical_higher, ties per model and
    dataset), `balanced`, `bias_by_dimension`, `agreement` (rho, p_value, n_models; dimension empty for overall and
    balanced) and `dimensions` (share and count per dataset and dimension)."""
    handle = io.StringIO()
    writer = SafeWriter(handle)
    writer.writerow(PAIR_CSV_COLUMNS)
    for model, by_dataset in report["bias_detail"].items():
        for dataset, detail in by_dataset.items():
            for statistic in ("score", "pairs", "stereotypical_higher", "ties"):
                writer.writerow(["bias", model, dataset, "", statistic, _number(detail[statistic])])
    for model, by_dataset in report["bias_balanced"].items():
        for dataset, score in by_dataset.items():
            writer.writerow(["balanced", model, dataset, "", "score", _number(score)])
    for model, by_dataset in report["bias_by_dimension"].items():
        for dataset, by_dimension in by_dataset.items():
            for dimension, score in by_dimension.items():
                writer.writerow(["bias_by_dimension", model, dataset, dimension, "score", _number(score)])
    _agreement_and_dimension_rows(writer, report)
    return handle.getvalue()


def _agreement_and_dimension_rows(writer: SafeWriter, report: dict) -> None:
    agreement = report["agreement"]
    together = "/".join(agreement["datasets"])
    rows = [("overall", "", agreement["overall"]), ("balanced", "", agreement["balanced"])]
    rows += [("by_dimension", d, value) for d, value in agreement["by_dimension"].items()]
    for name, dimension, value in rows:
        for statistic in ("rho", "p_value", "n_models"):
            writer.writerow([f"agreement_{name}", "", together, dimension, statistic, _number(value[statistic])])
    for dataset, shares in report["dimensions"].items():
        for dimension, share in shares.items():
            writer.writerow(["dimensions", "", dataset, dimension, "share", _number(share)])
            count = report["dimension_counts"][dataset][dimension]
            writer.writerow(["dimensions", "", dataset, dimension, "count", count])


def _rho(value: dict) -> list[str]:
    star = "*" if value["p_value"] is not None and value["p_value"] < 0.05 else ""
    return [_fmt(value["rho"]), star + _fmt(value["p_value"]), str(value["n_models"])]


def pair_report_latex(report: dict) -> str:
    """Table 4 (agreement, original and balanced), Table 5 (per dimension), Table 6 (bias before/after balancing)."""
    agreement = report["agreement"]
    between = " and ".join(agreement["datasets"]) or "the benchmarks"
    header = ["", "rho", "p-value", "models"]
    tables = [
        latex_table(
            f"Spearman's rho and p-value between {between} over models (* p < 0.05).",
            header,
            [["Original", *_rho(agreement["overall"])], ["Balanced", *_rho(agreement["balanced"])]],
            label="tab:pair-agreement",
        ),
        latex_table(
            f"Spearman's rho per stereotype dimension between {between} (* p < 0.05).",
            header,
            [[label_guideline(d)["name"], *_rho(agreement["by_dimension"][d])] for d in DIMENSIONS],
            label="tab:pair-agreement-dimensions",
        ),
    ]
    datasets = report["datasets"]
    balanced = report["bias_balanced"]
    body = [
        [model, *[_fmt(report["bias"][model].get(d), 2) for d in datasets],
         *[_fmt(balanced.get(model, {}).get(d), 2) for d in datasets]]
        for model in report["bias"]
    ]  # fmt: skip
    tables.append(
        latex_table(
            "Bias scores (100 x share of pairs whose stereotypical sentence scores higher; 50 is neutral), before "
            "and after balancing the dimensions.",
            ["Model", *[f"{d} (original)" for d in datasets], *[f"{d} (balanced)" for d in datasets]],
            body,
            label="tab:pair-bias",
        )
    )
    return "\n\n".join(table for table in tables if table) + "\n"


def pair_report_render(report: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2) + "\n"
    if fmt == "csv":
        return pair_report_csv(report)
    return pair_report_latex(report)
