"""Report exports: JSON, CSV (one file per table, zipped when more than one), LaTeX tables and standalone HTML.

`report_render` is the one dispatch from a format (and an optional table) to a body, a content type and a file name;
the `report` command, the page's downloads and the API all call it. Every CSV goes through `common.safe_csv`, and
every piece of text that reaches LaTeX goes through `latex_escape`.
"""

from __future__ import annotations

import io
import json
import math
import re
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.template.loader import render_to_string

from analysis.cells import CELL
from analysis.plots import PLOTS, plot_render, report_figures_inline
from analysis.selectors.report import SECTIONS
from annotation.schema import CORRECT, MISGENDERING
from common.safe_csv import SafeDictWriter

FORMATS = ["json", "csv", "html", "latex"]
CONTENT_TYPES = {
    "json": "application/json",
    "csv": "text/csv; charset=utf-8",
    "zip": "application/zip",
    "html": "text/html; charset=utf-8",
    "latex": "application/x-tex; charset=utf-8",
}
# Tables drawn from `inter_annotator`; every other report section is a table of its own.
INTER_ANNOTATOR_TABLES = ["inter_annotator", "confusion", "annotator_pairs", "pairwise"]
CSV_TABLES = [*INTER_ANNOTATOR_TABLES, *(key for key in SECTIONS if key != "inter_annotator")]
MEASURES = ("pronoun_label", "pronoun_binary", "extraneous")

# What each table holds when it has no rows: its CSV header (so that an empty file still says what it would hold) and
# what would fill it (the page and the LaTeX say so instead of printing an empty table). Columns that depend on the
# data (a pool's own labels, the shares of sigma) are those of the default schema.
_CELL_COLUMNS = list(CELL)
_TWO_PEOPLE = "items annotated by two people"
_JUDGE_RUN = "a finished LLM judge run over the pool (manage.py judge)"
_JUDGED_HUMANS = "a finished LLM judge run over annotated items"
_JUDGE_CELL_COLUMNS = ["judge", "origin", *CELL]
_JOB_PROB = "a generation job in the pool with probability-based results (imported generations have none)"
EMPTY_TABLES: dict[str, tuple[list[str], str]] = {
    "inter_annotator": (["measure", "n_items", "raw_agreement", "cohen_kappa", "krippendorff_alpha"], _TWO_PEOPLE),
    "confusion": (["first_annotator", "correct", "misgendering", "no_pronoun"], _TWO_PEOPLE),
    "annotator_pairs": (["annotator_1", "annotator_2", "n_items", "agreement"], _TWO_PEOPLE),
    "pairwise": (["measure", "annotator_1", "annotator_2", "n_items", "raw_agreement", "cohen_kappa"], _TWO_PEOPLE),
    "human_vs_heuristic": ([*_CELL_COLUMNS, "agreement", "sem", "n"], "annotated items"),
    "label_distribution": ([*_CELL_COLUMNS, "n", "correct", "misgendering", "no_pronoun"], "annotated items"),
    "extraneous_rate": ([*_CELL_COLUMNS, "rate", "sem", "n"], "annotated items"),
    "prob_vs_gen": (
        [
            *_CELL_COLUMNS,
            "n",
            "mcc",
            "mcc_ci_low",
            "mcc_ci_high",
            "kappa",
            "kappa_ci_low",
            "kappa_ci_high",
            "agreement",
        ],
        _JOB_PROB,
    ),
    "instance_variation": (
        [*_CELL_COLUMNS, "n", "samples", "shares_0.00", "shares_0.40", "shares_0.49"],
        "a generation job in the pool (5 samples per instance)",
    ),
    "beta_disagreement": ([*_CELL_COLUMNS, "n", "mean", "var", "alpha", "beta"], _JOB_PROB),
    "tango_failure_rate": ([*_CELL_COLUMNS, "mean", "sem", "n"], "a TANGO generation job in the pool"),
    "tango_variation": (
        [*_CELL_COLUMNS, "n_gen", "sigma_gen_mean", "sigma_gen_std", "n_prob", "sigma_prob_mean", "sigma_prob_std"],
        "a TANGO generation job in the pool",
    ),
    "repetition": ([*_CELL_COLUMNS, "mean", "std", "n"], "a generation job in the pool"),
    "accuracy": (
        [*_CELL_COLUMNS, "n", "prob", "prob_sem", "gen", "gen_sem", "gen_first", "gen_first_sem", "human", "human_sem"],
        "a generation job or annotated items in the pool",
    ),
    "conflict_rate": (["scope", "value", "conflicts", "instances", "rate"], _JOB_PROB),
    "disagreements": (
        [*_CELL_COLUMNS, "public_id", "human_label", "heuristic_correct", "first_pronoun", "context", "continuation"],
        "annotated items where the human verdict and the heuristic differ",
    ),
    "examples": (
        ["kind", "dataset", "setting", "model", "pronoun", "public_id", "context", "continuation", "human_label"],
        "annotated items",
    ),
    "annotator_quality": (
        ["annotator", "items", "gold_n", "gold_correct", "gold_accuracy", "median_seconds", "fast_share"],
        "annotations",
    ),
    "aggregates": (
        ["item", "n_ratings", "majority", "dawid_skene", "dawid_skene_posterior", "mace", *_CELL_COLUMNS],
        _TWO_PEOPLE,
    ),
    "human_vs_judge": ([*_JUDGE_CELL_COLUMNS, "human_agreement", "agreement", "sem", "n"], _JUDGED_HUMANS),
    "judge_vs_heuristic": ([*_JUDGE_CELL_COLUMNS, "human_agreement", "agreement", "sem", "n"], _JUDGE_RUN),
    "judge_calibration": (["judge", "origin", "n", "accuracy", "ece", "brier", "brier_multiclass"], _JUDGED_HUMANS),
    "judge_reliability": (["judge", "low", "high", "n", "confidence", "accuracy"], _JUDGED_HUMANS),
}
# Columns whose values are labels: shown with one spelling everywhere ("no pronoun", never "no_pronoun").
LABEL_COLUMNS = {"human_label", "majority", "dawid_skene", "mace", "first_annotator", "label", "gold_label"}


def label_text(label: object) -> str:
    """A label as people read it: `no_pronoun` -> `no pronoun` (the stored value keeps its underscore)."""
    return str(label).replace("_", " ")


def empty_table_fills(table: str) -> str:
    """What would fill an empty table, for the sentence that replaces it."""
    return EMPTY_TABLES.get(table, ([], ""))[1] or "data this pool does not have yet"


class ReportFormatError(ValueError):
    """An unknown format, or a table the format cannot give on its own."""


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
        return [
            {"measure": m, **_flatten({k: v for k, v in inter[m].items() if k != "pairwise"})}
            for m in ("pronoun_label", "pronoun_binary", "extraneous")
        ]
    if table == "pairwise":  # Cohen's kappa per annotator pair, for every view
        return [
            {"measure": m, **_flatten(row)}
            for m in ("pronoun_label", "pronoun_binary", "extraneous")
            for row in inter[m].get("pairwise", [])
        ]
    if table == "confusion":
        labels = inter["confusion"]["labels"]
        return [
            {"first_annotator": label, **dict(zip(labels, counts, strict=True))}
            for label, counts in zip(labels, inter["confusion"]["matrix"], strict=True)
        ]
    if table == "annotator_pairs":
        return inter["annotator_pairs"]
    return [_flatten(row) for row in report[table]]


def _rounded_times(rows: list[dict]) -> list[dict]:
    """Durations to the millisecond: `median_seconds` 2.3456789 is 2.346."""
    return [
        {k: round(v, 3) if "seconds" in k and isinstance(v, float) and math.isfinite(v) else v for k, v in row.items()}
        for row in rows
    ]


def report_csv(*, report: dict, table: str) -> str:
    """One table as CSV; a table without rows still has its header (EMPTY_TABLES)."""
    rows = _rounded_times(report_table_rows(report=report, table=table))
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    if not columns:
        columns = list(EMPTY_TABLES.get(table, (list(CELL), ""))[0])
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_clean(rows))
    return buffer.getvalue()


def report_csv_zip(*, report: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for table in CSV_TABLES:
            archive.writestr(f"{report['pool']}/{table}.csv", report_csv(report=report, table=table))
    return buffer.getvalue()


# --- LaTeX -----------------------------------------------------------------------------------------------------------

LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "^": r"\textasciicircum{}",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "%": r"\%",
}


class Latex(str):
    """Markup written by this module (math, bold, underline): passed through `latex_escape` unchanged."""


def latex_escape(text: object) -> str:
    """Text as LaTeX prints it: every special character (\\ { } $ & # ^ _ ~ %) escaped, in one pass so that an
    escape is never escaped again. `Latex` markup is left as it is."""
    if isinstance(text, Latex):
        return str(text)
    return "".join(LATEX_SPECIALS.get(character, character) for character in str(text))


def latex_join(*parts: object) -> Latex:
    """Markup from pieces: `Latex` pieces verbatim, anything else escaped."""
    return Latex("".join(latex_escape(part) for part in parts))


PM = Latex(r"$\pm$")


def _fmt(value, digits: int = 3) -> str:
    return "--" if value is None else f"{value:.{digits}f}"


def _interval(value, ci) -> str:
    """A coefficient and its 95% CI as `0.123 [0.045, 0.201]`; an undefined interval reads `[undefined]`."""
    if value is None:
        return "--"
    if not ci:
        return f"{value:.3f} [undefined]"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _ci(ci) -> str:
    """A bootstrap interval as `[0.812, 0.934]`; `--` where there is none."""
    return "--" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _mean_sem(value, sem) -> Latex:
    r"""`0.500 $\pm$ 0.100`; a missing value reads `--` alone (never `-- $\pm$ --`), a missing spread the value alone."""
    if value is None:
        return Latex("--")
    if sem is None:
        return Latex(_fmt(value))
    return latex_join(_fmt(value), " ", PM, " ", _fmt(sem))


# A body cell that is a number: `12`, `0.500`, `0.500 $\pm$ 0.1`, `0.123 [0.045, 0.201]`, `[0.8, 0.9]`, `0.5 (3)`, `--`.
NUMERIC_CELL = re.compile(r"(--|-?\d+(\.\d+)?(\s.*)?|\[.*\])")


def _column_spec(body: list[list]) -> str:
    """Right-aligned columns for numbers, left-aligned for words: a column is numeric when every cell is a number
    (or `--`) and one at least is not `--`."""
    spec = ""
    for column in zip(*body, strict=True):
        cells = [str(cell) for cell in column]
        numeric = all(NUMERIC_CELL.fullmatch(cell) for cell in cells) and any(cell != "--" for cell in cells)
        spec += "r" if numeric else "l"
    return spec


def latex_label(*parts: str) -> str:
    r"""`\label{tab:...}` for a table: its name (and, for the examples, its kind, dataset and setting)."""
    return "tab:" + "-".join(re.sub(r"[^a-z0-9]+", "-", part.lower()).strip("-") for part in parts)


def _latex_table(
    caption: str,
    header: list[str],
    body: Iterable[list],
    *,
    label: str | None = None,
    spec: str | None = None,
    fit: bool = False,
) -> str:
    """A booktabs table; every header cell, body cell and the caption pass through `latex_escape`. No rows: nothing
    (report_latex says what would fill it). Numbers sit in right-aligned columns unless `spec` says otherwise;
    `label` is the table's `\\label`. `fit`: scaled to the text width (graphicx's \\resizebox), for tables whose
    last column would otherwise run off the page."""
    body = list(body)
    if not body:
        return ""
    # A column with no value in any row (an imported pool has no probability side) is left out, and said so once.
    empty = [k for k, column in enumerate(zip(*body, strict=True)) if all(str(cell) == "--" for cell in column)]
    if empty and spec is None:
        names = [part for k in empty for part in (", ", header[k])][1:]
        caption = latex_join(caption, " No values in this pool, left out: ", *names, ".")
        header = [h for k, h in enumerate(header) if k not in empty]
        body = [[cell for k, cell in enumerate(row) if k not in empty] for row in body]
    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{" + (spec or _column_spec(body)) + "}", r"\toprule"]
    lines.append(" & ".join(latex_escape(h) for h in header) + r" \\")
    rows = [" & ".join(latex_escape(cell) for cell in row) for row in body]
    # `\\` and `\midrule` both take an optional argument in brackets: a row that starts with `[` (an interval, say)
    # would be read as that argument, so the command before it is closed with `{}`.
    lines.append(r"\midrule{}" if rows and rows[0].startswith("[") else r"\midrule")
    lines += [
        row + (r" \\{}" if following.startswith("[") else r" \\")
        for row, following in zip(rows, [*rows[1:], ""], strict=True)
    ]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if fit:
        begin = lines.index(next(line for line in lines if line.startswith(r"\begin{tabular}")))
        lines.insert(begin, r"\resizebox{\linewidth}{!}{%")
        lines.append("}")
    lines.append(r"\caption{" + latex_escape(caption) + "}" + (r"\label{" + label + "}" if label else ""))
    lines += [r"\end{table}", ""]
    return "\n".join(lines)


def _cell(row: dict) -> list[str]:
    return [str(row[c]) for c in CELL]


# The LaTeX tables' headings are words (the CSV keeps the keys).
CELL_HEADINGS = ["Model", "Dataset", "Setting", "Pronoun"]
LATEX_MEASURES = {
    "pronoun_label": "pronoun label",
    "pronoun_binary": "misgendering or not",
    "extraneous": "extraneous flag",
}


def _latex_inter_annotator(report: dict) -> str:
    inter = report["inter_annotator"]
    return _latex_table(
        "Inter-annotator agreement on the overlap items: raw agreement with its bootstrap 95% CI, Cohen's kappa on the "
        "square table over the label set and Krippendorff's alpha (first two annotations); Gwet's AC1 and Fleiss' "
        "kappa over every annotation, each item with its own number of raters.",
        [
            "Measure",
            "Items",
            "Raw agreement [95% CI]",
            "Cohen's kappa [95% CI]",
            "Krippendorff's alpha",
            "Gwet's AC1 [95% CI]",
            "Fleiss' kappa",
        ],
        [
            [
                LATEX_MEASURES.get(m, m),
                str(inter[m]["n_items"]),
                _interval(inter[m]["raw_agreement"], inter[m].get("raw_agreement_boot_ci")),
                _interval(inter[m]["cohen_kappa"], inter[m]["kappa_ci"]),
                _fmt(inter[m]["krippendorff_alpha"]),
                _interval(inter[m].get("gwet_ac1"), inter[m].get("gwet_ac1_ci")),
                _fmt(inter[m].get("fleiss_kappa")),
            ]
            for m in MEASURES
            if inter[m]["n_items"]
        ],
        label=latex_label("inter_annotator"),
    )


def _latex_human_vs_heuristic(report: dict) -> str:
    return _latex_table(
        latex_join(
            "Human vs heuristic agreement (mean ",
            PM,
            " SEM, bootstrap 95% CI), and on the items whose annotators were unanimous or split (items in brackets).",
        ),
        [*CELL_HEADINGS, "Items", "Agreement", "95% CI", "Unanimous", "Split"],
        [
            [
                *_cell(r),
                str(r["n"]),
                _mean_sem(r["agreement"], r["sem"]),
                _ci(r.get("agreement_boot_ci")),
                f"{_fmt(r.get('agreement_unanimous'))} ({r.get('agreement_unanimous_n', 0)})",
                f"{_fmt(r.get('agreement_split'))} ({r.get('agreement_split_n', 0)})",
            ]
            for r in report["human_vs_heuristic"]
        ],
        label=latex_label("human_vs_heuristic"),
    )


def _latex_prob_vs_gen(report: dict) -> str:
    return _latex_table(
        "Probability vs first-sample generation agreement: MCC and Cohen's kappa with 95% CIs; kappa as the paper "
        "computes it (a one-sided table when one side is constant) and beside it on the square 2x2 table.",
        [
            *CELL_HEADINGS,
            "Instances",
            "MCC [95% CI]",
            "Cohen's kappa, as the paper computes it [95% CI]",
            "Cohen's kappa, square table [95% CI]",
            "Raw agreement",
        ],
        [
            [
                *_cell(r),
                str(r["n"]),
                _interval(r["mcc"], r["mcc_ci"]),
                _interval(r["kappa"], r["kappa_ci"]),
                _interval(r.get("kappa_square"), r.get("kappa_square_ci")),
                _fmt(r["agreement"]),
            ]
            for r in report["prob_vs_gen"]
        ],
        label=latex_label("prob_vs_gen"),
    )


def _latex_repetition(report: dict) -> str:
    return _latex_table(
        latex_join("Repetition rate (mean ", PM, " std)."),
        [*CELL_HEADINGS, "Generations", "Repetition rate"],
        [[*_cell(r), str(r["n"]), _mean_sem(r["mean"], r["std"])] for r in report["repetition"]],
        label=latex_label("repetition"),
    )


def _latex_accuracy(report: dict) -> str:
    return _latex_table(
        latex_join(
            "Accuracy per cell (mean ",
            PM,
            " SEM): probability-based, generation-based over all samples and over the "
            "first sample, and the human verdict on the pool's items.",
        ),
        [*CELL_HEADINGS, "Instances", "Probability", "Generation", "First sample", "Human", "Items"],
        [
            [
                *_cell(r),
                str(r["n"]),
                _mean_sem(r["prob"], r["prob_sem"]),
                _mean_sem(r["gen"], r["gen_sem"]),
                _mean_sem(r["gen_first"], r["gen_first_sem"]),
                _mean_sem(r["human"], r["human_sem"]),
                str(r["human_n"]),
            ]
            for r in report["accuracy"]
        ],
        fit=True,
        label=latex_label("accuracy"),
    )


def _latex_conflict_rate(report: dict) -> str:
    return _latex_table(
        "Conflict rate: the share of instances whose probability-based result differs from their first sample's "
        "generation-based result, weighted by instances (sum of conflicts / sum of instances).",
        ["Scope", "Value", "Conflicts", "Instances", "Rate"],
        [
            [r["scope"], str(r["value"]), str(r["conflicts"]), str(r["instances"]), _fmt(r["rate"])]
            for r in report["conflict_rate"]
        ],
        label=latex_label("conflict_rate"),
    )


def _example_text(row: dict) -> Latex:
    """The context in bold, then the generation with its first pronoun underlined (the paper's tables 8 and 9)."""
    context, continuation, first = row["context"], row["continuation"], row["first_pronoun"] or ""
    match = re.search(rf"\b{re.escape(first)}\b", continuation, flags=re.IGNORECASE) if first else None
    if match is None:
        generated = latex_join(continuation)
    else:
        generated = latex_join(
            continuation[: match.start()],
            Latex(r"\underline{" + latex_escape(match.group(0)) + "}"),
            continuation[match.end() :],
        )
    return latex_join(Latex(r"\textbf{" + latex_escape(context) + "}"), generated)


EXAMPLE_CAPTIONS = {
    "disagreement": "Examples of human disagreement with the heuristic, {table}: one item per model, drawn as the "
    "seed draws it (seed {seed}). Bold: the context; underlined: the first pronoun, which the heuristic reads.",
    "extraneous": "Examples of extraneous gendered language, {table}: one item per model, drawn as the seed draws it "
    "(seed {seed}). Bold: the context; underlined: the first pronoun.",
}


def _latex_examples(report: dict) -> str:
    """One table per kind x dataset x setting, as the report's rows come (docs/domain.md, 'Aggregates')."""
    tables: dict[tuple[str, str, str], list[list]] = {}
    for r in report["examples"]:
        body = tables.setdefault((r["kind"], r["dataset"], r["setting"]), [])
        if r["public_id"] is None:
            body.append([r["model"], "---", "---", "---", "---"])
            continue
        body.append(
            [
                r["model"],
                r["pronoun"],
                _example_text(r),
                label_text(r["human_label"]),
                CORRECT if r["heuristic_correct"] else MISGENDERING,
            ]
        )
    return "\n".join(
        _latex_table(
            EXAMPLE_CAPTIONS[kind].format(table=f"{dataset} {setting}", seed=report.get("examples_seed")),
            ["model", "pronoun", "example", "human", "heuristic"],
            body,
            label=latex_label("examples", kind, dataset, setting),
            spec="llp{0.55\\linewidth}ll",
        )
        for (kind, dataset, setting), body in tables.items()
    )


def _latex_tango(report: dict) -> str:
    """TANGO per model x pronoun: the template failure rate and the two sigmas (docs/domain.md, 'TANGO and Prob-TANGO')."""
    variation = {tuple(_cell(r)): r for r in report.get("tango_variation") or []}
    body = []
    for r in report.get("tango_failure_rate") or []:
        v = variation.get(tuple(_cell(r)), {})
        body.append(
            [
                *_cell(r),
                str(r["n"]),
                _mean_sem(r["mean"], r["sem"]),
                _mean_sem(v.get("sigma_gen_mean"), v.get("sigma_gen_std")),
                _mean_sem(v.get("sigma_prob_mean"), v.get("sigma_prob_std")),
            ]
        )
    return _latex_table(
        latex_join(
            "TANGO: template failure rate (mean ", PM, " SEM) and instance-level variation (mean ", PM, " std)."
        ),
        [*CELL_HEADINGS, "Instances", "Failure rate", Latex(r"$\sigma_{gen}$"), Latex(r"$\sigma_{prob}$")],
        body,
        label=latex_label("tango"),
    )


# The LaTeX tables by name, in the order of the full export; `--table NAME` gives one.
LATEX_TABLES: dict[str, Callable[[dict], str]] = {
    "inter_annotator": _latex_inter_annotator,
    "human_vs_heuristic": _latex_human_vs_heuristic,
    "prob_vs_gen": _latex_prob_vs_gen,
    "tango": _latex_tango,
    "repetition": _latex_repetition,
    "accuracy": _latex_accuracy,
    "conflict_rate": _latex_conflict_rate,
    "examples": _latex_examples,
}


LATEX_FILLS = {"inter_annotator": _TWO_PEOPLE, "tango": "a TANGO generation job in the pool"}


def report_latex(*, report: dict, table: str | None = None) -> str:
    """The main tables in booktabs LaTeX, or the one named `table`. An empty table is not emitted: a LaTeX comment
    says what would fill it."""
    parts = []
    for name in [table] if table is not None else list(LATEX_TABLES):
        rendered = LATEX_TABLES[name](report)
        if rendered.strip():
            parts.append(rendered)
        else:
            fills = LATEX_FILLS.get(name) or empty_table_fills(name)
            parts.append(f"% {name.replace('_', ' ')}: no rows yet; filled by {fills}.\n")
    return "\n".join(parts)


# --- HTML --------------------------------------------------------------------------------------------------------------


def report_plots_svg(*, report: dict) -> dict[str, str]:
    return {name: plot_render(report=report, name=name, fmt="svg").decode() for name in PLOTS}


def report_html(*, report: dict) -> str:
    """A standalone page: inline CSS, the plots as embedded SVG, every table."""
    return render_to_string(
        "analysis/report_standalone.html",
        {
            "report": _clean(report),
            "plots": report_figures_inline(report=report),
            "tables": report_tables_for_display(report=report),
        },
    )


# Shown in sections of their own on the page rather than as plain tables.
NOT_DISPLAYED_AS_TABLES = {"disagreements", "examples", "aggregates"}  # aggregates: one row per item, linked as CSV


def report_tables_for_display(*, report: dict) -> list[dict]:
    """Tables as headers + rows of strings, for the page and the standalone HTML."""
    tables = []
    for table in CSV_TABLES:
        if table in NOT_DISPLAYED_AS_TABLES:
            continue
        rows = report_table_rows(report=report, table=table)
        columns: list[str] = []
        for row in rows:
            columns += [key for key in row if key not in columns]
        tables.append(
            {
                "name": table,
                "columns": columns,
                "rows": [
                    [
                        label_text(row[c])
                        if c in LABEL_COLUMNS and isinstance(row.get(c), str)
                        else _display(row.get(c))
                        for c in columns
                    ]
                    for row in rows
                ],
                "fills": empty_table_fills(table),
            }
        )
    return tables


def _display(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return "—" if not math.isfinite(value) else f"{value:.3f}"
    return str(value)


# --- The one dispatch --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rendered:
    body: str | bytes
    content_type: str
    filename: str


def report_tables_for(fmt: str) -> list[str]:
    """The tables a format can give on its own (`--table`, `?table=`)."""
    return {"csv": CSV_TABLES, "json": CSV_TABLES, "latex": list(LATEX_TABLES)}.get(fmt, [])


def report_render(*, report: dict, fmt: str, table: str | None = None) -> Rendered:
    """The report in one format: json, csv (a zip of every table, or one table), html, or latex (every main table, or
    one). Raises ReportFormatError naming the format or table it cannot give."""
    name = report["pool"]
    if fmt not in FORMATS:
        raise ReportFormatError(f"Unknown format {fmt!r}; choose one of {', '.join(FORMATS)}.")
    if table is not None and table not in report_tables_for(fmt):
        choices = report_tables_for(fmt)
        raise ReportFormatError(
            f"The {fmt} format has no table {table!r}"
            + (f"; choose one of {', '.join(choices)}." if choices else "; it only comes whole.")
        )
    if fmt == "csv":
        if table:
            return Rendered(report_csv(report=report, table=table), CONTENT_TYPES["csv"], f"{name}-{table}.csv")
        return Rendered(report_csv_zip(report=report), CONTENT_TYPES["zip"], f"{name}-report.zip")
    if fmt == "json":
        if table:
            body = json.dumps(
                _clean({"pool": name, "table": table, "rows": report_table_rows(report=report, table=table)}),
                indent=2,
                allow_nan=False,
            )
            return Rendered(body, CONTENT_TYPES["json"], f"{name}-{table}.json")
        return Rendered(report_json(report=report), CONTENT_TYPES["json"], f"{name}-report.json")
    if fmt == "html":
        return Rendered(report_html(report=report), CONTENT_TYPES["html"], f"{name}-report.html")
    suffix = f"-{table}" if table else "-report"
    return Rendered(report_latex(report=report, table=table), CONTENT_TYPES["latex"], f"{name}{suffix}.tex")
