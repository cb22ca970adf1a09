"""Report exports: JSON, CSV (one file per table, zipped when more than one), LaTeX tables and standalone HTML."""

from __future__ import annotations

import csv
import io
import json
import math
import zipfile

from django.template.loader import render_to_string

from analysis.plots import PLOTS, plot_render
from analysis.selectors.report import TABLES

FORMATS = ["json", "csv", "html", "latex"]
CSV_TABLES = ["inter_annotator", "confusion", "annotator_pairs", *TABLES, "disagreements"]


def _clean(value):
    """NaN and infinities out of the JSON (as null), recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def report_json(*, report: dict) -> str:
    return json.dumps(_clean(report), indent=2, allow_nan=False)


def _flatten(row: dict) -> dict:
    """CSV columns: [low, high] intervals become `<key>_low`/`<key>_high`, dicts `<key>_<subkey>`."""
    flat: dict = {}
    for key, value in row.items():
        if key.endswith("_ci"):
            low, high = value if value else (None, None)
            flat[f"{key}_low"], flat[f"{key}_high"] = low, high
        elif isinstance(value, dict):
            for sub, inner in value.items():
                flat[f"{key}_{sub}"] = inner
        else:
            flat[key] = value
    return flat


def report_table_rows(*, report: dict, table: str) -> list[dict]:
    """The rows of one CSV table."""
    inter = report["inter_annotator"]
    if table == "inter_annotator":
        return [{"measure": m, **_flatten(inter[m])} for m in ("pronoun_label", "pronoun_binary", "extraneous")]
    if table == "confusion":
        labels = inter["confusion"]["labels"]
        return [
            {"first_annotator": label, **dict(zip(labels, counts, strict=True))}
            for label, counts in zip(labels, inter["confusion"]["matrix"], strict=True)
        ]
    if table == "annotator_pairs":
        return inter["annotator_pairs"]
    return [_flatten(row) for row in report[table]]


def report_csv(*, report: dict, table: str) -> str:
    rows = report_table_rows(report=report, table=table)
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_clean(rows))
    return buffer.getvalue()


def report_csv_zip(*, report: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for table in CSV_TABLES:
            archive.writestr(f"{report['pool']}/{table}.csv", report_csv(report=report, table=table))
    return buffer.getvalue()


def _fmt(value, digits: int = 3) -> str:
    return "--" if value is None else f"{value:.{digits}f}"


def _interval(value, ci) -> str:
    if value is None:
        return "--"
    return f"{value:.2f}" if not ci else f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def _latex_table(caption: str, header: list[str], body: list[list[str]]) -> str:
    escape = str.maketrans({"_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#"})
    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{" + "l" * len(header) + "}", r"\toprule"]
    lines.append(" & ".join(h.translate(escape) for h in header) + r" \\")
    lines.append(r"\midrule")
    lines += [" & ".join(cell.translate(escape) for cell in row) + r" \\" for row in body]
    lines += [r"\bottomrule", r"\end{tabular}", r"\caption{" + caption.translate(escape) + "}", r"\end{table}", ""]
    return "\n".join(lines)


def report_latex(*, report: dict) -> str:
    """The main tables in booktabs LaTeX: inter-annotator agreement, human vs heuristic, MCC and kappa of probability
    vs generation, repetition."""
    cell = ["model", "dataset", "setting", "pronoun"]
    parts = [
        _latex_table(
            "Inter-annotator agreement on the overlap items.",
            ["measure", "items", "raw agreement", "Cohen's kappa [95% CI]", "Krippendorff's alpha"],
            [
                [
                    m,
                    str(b["n_items"]),
                    _fmt(b["raw_agreement"]),
                    _interval(b["cohen_kappa"], b["kappa_ci"]),
                    _fmt(b["krippendorff_alpha"]),
                ]
                for m, b in (
                    (m, report["inter_annotator"][m]) for m in ("pronoun_label", "pronoun_binary", "extraneous")
                )
            ],
        ),
        _latex_table(
            "Human vs heuristic agreement (mean $\\pm$ SEM).",
            [*cell, "n", "agreement"],
            [
                [*(r[c] for c in cell), str(r["n"]), f"{_fmt(r['agreement'])} $\\pm$ {_fmt(r['sem'])}"]
                for r in report["human_vs_heuristic"]
            ],
        ),
        _latex_table(
            "Probability vs first-sample generation agreement: MCC and Cohen's kappa with 95% CIs.",
            [*cell, "n", "MCC", "kappa", "raw agreement"],
            [
                [
                    *(r[c] for c in cell),
                    str(r["n"]),
                    _interval(r["mcc"], r["mcc_ci"]),
                    _interval(r["kappa"], r["kappa_ci"]),
                    _fmt(r["agreement"]),
                ]
                for r in report["prob_vs_gen"]
            ],
        ),
        _latex_table(
            "Repetition rate (mean $\\pm$ std).",
            [*cell, "n", "RR"],
            [
                [*(r[c] for c in cell), str(r["n"]), f"{_fmt(r['mean'])} $\\pm$ {_fmt(r['std'])}"]
                for r in report["repetition"]
            ],
        ),
    ]
    return "\n".join(parts)


def report_plots_svg(*, report: dict) -> dict[str, str]:
    return {name: plot_render(report=report, name=name, fmt="svg").decode() for name in PLOTS}


def report_html(*, report: dict) -> str:
    """A standalone page: inline CSS, the plots as embedded SVG, every table."""
    return render_to_string(
        "analysis/report_standalone.html",
        {
            "report": _clean(report),
            "plots": report_plots_svg(report=report),
            "tables": report_tables_for_display(report=report),
        },
    )


def report_tables_for_display(*, report: dict) -> list[dict]:
    """Tables as headers + rows of strings, for the page and the standalone HTML."""
    tables = []
    for table in CSV_TABLES:
        if table == "disagreements":
            continue
        rows = report_table_rows(report=report, table=table)
        columns: list[str] = []
        for row in rows:
            columns += [key for key in row if key not in columns]
        tables.append(
            {
                "name": table,
                "columns": columns,
                "rows": [[_display(row.get(c)) for c in columns] for row in rows],
            }
        )
    return tables


def _display(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return "—" if not math.isfinite(value) else f"{value:.3f}"
    return str(value)
