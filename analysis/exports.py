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
from analysis.selectors.verdict import NOTE as VERDICT_NOTE
from analysis.selectors.verdict import verdict_display
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
# Tables drawn from `judge_verdict` beside its own (one row per run): the agreement rows and the Alt-Test's annotators.
JUDGE_VERDICT_TABLES = ["judge_verdict_agreement", "judge_verdict_annotators"]
CSV_TABLES = [
    *INTER_ANNOTATOR_TABLES,
    *(
        name
        for key in SECTIONS
        if key != "inter_annotator"
        for name in ([key, *JUDGE_VERDICT_TABLES] if key == "judge_verdict" else [key])
    ),
]
MEASURES = ("pronoun_label", "pronoun_binary", "extraneous")

# What each table holds when it has no rows: its CSV header (so that an empty file still says what it would hold) and
# what would fill it (the page and the LaTeX say so instead of printing an empty table). Columns that depend on the
# data (a pool's own labels, the shares of sigma) are those of the default schema.
_CELL_COLUMNS = list(CELL)
_TWO_PEOPLE = "items annotated by two people"
_JUDGE_RUN = "a finished LLM judge run over the pool (manage.py judge)"
_JUDGED_HUMANS = "a finished LLM judge run over annotated items"
_JUDGE_CELL_COLUMNS = ["judge", "origin", *CELL]
_JUDGE_VERDICT = "a finished LLM judge run over the pool or its generation job, and annotated items"
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
    "judge_calibration": (
        ["judge", "origin", "model", "dataset", "n", "accuracy", "ece", "brier", "brier_multiclass"],
        _JUDGED_HUMANS,
    ),
    "judge_reliability": (["judge", "low", "high", "n", "confidence", "accuracy"], _JUDGED_HUMANS),
    "judge_verdict": (
        [
            "judge", "version", "run", "epsilon", "q", "omega", "rho", "passed", "tested", "skipped", "note",
            *(f"omega_{e}" for e in ("0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30")),
            "selective_alpha", "selective_delta", "selective_threshold", "selective_coverage",
            "selective_coverage_job", "selective_agreement_above", "selective_n",
        ],
        _JUDGE_VERDICT,
    ),
    "judge_verdict_agreement": (
        [
            "judge", "run", "against", "n", "cohen_kappa", "scott_pi", "gwet_ac1",
            "per_class_kappa_correct", "per_class_kappa_misgendering", "per_class_kappa_no_pronoun",
            "cohen_kappa_boot_ci_low", "cohen_kappa_boot_ci_high", "scott_pi_boot_ci_low", "scott_pi_boot_ci_high",
            "gwet_ac1_boot_ci_low", "gwet_ac1_boot_ci_high",
        ],
        _JUDGE_VERDICT,
    ),
    "judge_verdict_annotators": (["judge", "run", "annotator", "n", "p_value", "rejected", "rho"], _JUDGE_VERDICT),
    "prediction_powered": (
        [
            "judge", "run", "model", "dataset", "pronoun", "n", "N", "ppi_rate", "ppi_ci_low", "ppi_ci_high",
            "human_rate", "human_ci_low", "human_ci_high", "judge_rate", "n_eff",
        ],
        "a finished LLM judge run over the pool's generation job (manage.py judge --job) and annotated items",
    ),
    "ranking_agreement": (
        ["dataset_a", "method_a", "dataset_b", "method_b", "n_models", "tau", "p_value", "p_method", "note"],
        "accuracies of the same models on two datasets or by two methods",
    ),
    "by_guideline_version": (
        ["guideline_version", "n", "agreement", "sem"],
        "annotations saved under two or more versions of the pool's guidelines",
    ),
}  # fmt: skip
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
    if table in ("judge_verdict", *JUDGE_VERDICT_TABLES):
        return judge_verdict_rows(report=report, table=table)
    return [_flatten(row) for row in report[table]]


def judge_verdict_rows(*, report: dict, table: str) -> list[dict]:
    """The flat tables of `judge_verdict`: one row per run (the Alt-Test's figures, omega per epsilon and the
    selective threshold; the risk-coverage curve stays in the JSON), its agreement rows, and the Alt-Test's
    annotators."""
    rows = []
    for row in report.get("judge_verdict") or []:
        run = {"judge": row["judge"], "run": row["run"]}
        test = row["alt_test"]
        if table == "judge_verdict_agreement":
            rows += [{**run, **_flatten(agreement)} for agreement in row["agreement"]]
        elif table == "judge_verdict_annotators":
            rows += [{**run, **annotator} for annotator in test["annotators"]]
        else:
            rows.append(
                {
                    **run,
                    "version": row["version"],
                    "epsilon": row["epsilon"],
                    "q": row["q"],
                    **{key: test[key] for key in ("omega", "rho", "passed", "tested")},
                    "skipped": ";".join(test["skipped"]),
                    "note": test["note"] or "",
                    **{f"omega_{key}": value for key, value in test["omega_by_epsilon"].items()},
                    **{f"selective_{key}": value for key, value in row["selective"].items() if key != "curve"},
                }
            )
    return rows


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


# A prob-vs-gen kappa interval outside [-1, 1] is statsmodels' (its normal approximation on very few instances,
# n = 2 say) and kept as the paper computes it (docs/domain.md, 'Metrics'); it is marked wherever it is shown.
KAPPA_BEYOND_NOTE = (
    "wider than [-1, 1]: statsmodels' interval on so few instances (n = 2, say), kept as the paper computes it."
)
KAPPA_BEYOND_MARK = "†"


def kappa_ci_beyond_bounds(ci) -> bool:
    """Whether a kappa interval reaches past [-1, 1]."""
    return bool(ci) and (ci[0] < -1 or ci[1] > 1)


def _latex_prob_vs_gen(report: dict) -> str:
    dagger = Latex(r"$^\dagger$")
    caption = latex_join(
        "Probability vs first-sample generation agreement: MCC and Cohen's kappa with 95% CIs; kappa as the paper "
        "computes it (a one-sided table when one side is constant) and beside it on the square 2x2 table."
    )
    if any(kappa_ci_beyond_bounds(r["kappa_ci"]) for r in report["prob_vs_gen"]):
        caption = latex_join(caption, " ", dagger, " An interval " + KAPPA_BEYOND_NOTE)
    return _latex_table(
        caption,
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
                latex_join(
                    _interval(r["kappa"], r["kappa_ci"]), dagger if kappa_ci_beyond_bounds(r["kappa_ci"]) else ""
                ),
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


PROB_SCORE_NAMES = {"mean": "mean token loss", "sum": "summed log-probability"}


def _latex_accuracy(report: dict) -> str:
    scores = sorted({r["prob_score"] for r in report["accuracy"] if r.get("prob_score")})
    return _latex_table(
        latex_join(
            "Accuracy per cell (mean ",
            PM,
            " SEM): probability-based, generation-based over all samples and over the "
            "first sample, and the human verdict on the pool's items.",
            # docs/domain.md, 'Probability scoring: mean or sum': the jobs' choice labels the probability figures
            f" Probability scoring: {', '.join(PROB_SCORE_NAMES.get(x, x) for x in scores)}." if scores else "",
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


def _latex_judge_verdict(report: dict) -> str:
    body = []
    for row in report.get("judge_verdict") or []:
        test, selective = row["alt_test"], row["selective"]
        human: dict = next((a for a in row["agreement"] if a["against"] == "human"), {})
        ceiling: dict = next((a for a in row["agreement"] if a["against"] == "human_ceiling"), {})
        verdict = "--" if test["passed"] is None else ("passes" if test["passed"] else "fails")
        body.append(
            [
                f"{row['judge']} v{row['version']} (run {row['run']})",
                verdict,
                _fmt(test["omega"], 2),
                str(test["tested"]),
                _fmt(test["rho"]),
                _interval(human.get("cohen_kappa"), human.get("cohen_kappa_boot_ci")),
                _fmt(ceiling.get("cohen_kappa")),
                _fmt(selective["threshold"]),
                _fmt(selective["coverage"]),
            ]
        )
    first = (report.get("judge_verdict") or [{}])[0]
    epsilon = first.get("epsilon", 0.15)
    alpha = first.get("selective", {}).get("alpha", 0.1)
    delta = first.get("selective", {}).get("delta", 0.1)
    return _latex_table(
        f"The judge's verdict: the Alternative Annotator Test at epsilon {epsilon:.2f} (q = 0.05; omega the winning "
        "rate over the tested annotators, rho the advantage probability), Cohen's kappa with the human label "
        f"[bootstrap 95% CI] beside the human ceiling (mean over annotator pairs), and the selective threshold for a "
        f"disagreement of at most {alpha:g} with probability {1 - delta:g} and its coverage. A judge is a model: "
        "its verdict holds for this pool, these annotators and this epsilon.",
        ["Judge", "Alt-Test", "Omega", "Annotators", "Rho", "Kappa vs human [95% CI]", "Human ceiling", "Threshold",
         "Coverage"],
        body,
        label=latex_label("judge-verdict"),
        fit=True,
    )  # fmt: skip


def _latex_prediction_powered(report: dict) -> str:
    return _latex_table(
        "Misgendering rate per model, dataset and pronoun (unit: a context): prediction-powered (PPI++) with its 95% "
        "interval, beside people only and the judge only (biased); n labelled and N unlabelled contexts, and n_eff "
        "the labelled contexts people alone would need for the same width.",
        ["Judge", "Model", "Dataset", "Pronoun", "n", "N", "PPI [95% CI]", "People only [95% CI]", "Judge only",
         "n_eff"],
        [
            [
                f"{r['judge']} (run {r['run']})", r["model"], r["dataset"], r["pronoun"], str(r["n"]), str(r["N"]),
                _interval(r["ppi_rate"], r["ppi_ci"]), _interval(r["human_rate"], r["human_ci"]),
                _fmt(r["judge_rate"]), _fmt(r["n_eff"], 1),
            ]
            for r in report.get("prediction_powered") or []
        ],
        label=latex_label("prediction-powered"),
        fit=True,
    )  # fmt: skip


def _latex_ranking_agreement(report: dict) -> str:
    rows = report.get("ranking_agreement") or []
    return _latex_table(
        latex_join(
            "Rankings across benchmarks: Kendall's ",
            Latex(r"$\tau$"),
            " between the models' accuracies for each pair of (dataset, method), over the models both have, with its "
            "exact p-value (asymptotic where accuracies tie). Fewer than 3 shared models give no ",
            Latex(r"$\tau$"),
            ". With 6 models, only ",
            Latex(r"$\tau \geq 0.87$"),
            " is significant at 0.05.",
        ),
        ["Dataset", "Method", "Dataset", "Method", "Models", Latex(r"$\tau$"), "p", "Note"],
        [
            [
                r["dataset_a"],
                r["method_a"],
                r["dataset_b"],
                r["method_b"],
                str(r["n_models"]),
                _fmt(r["tau"]),
                _fmt(r["p_value"]),
                r["note"] or "",
            ]
            for r in rows
        ],
        label=latex_label("ranking-agreement"),
        fit=True,
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
    "judge_verdict": _latex_judge_verdict,
    "prediction_powered": _latex_prediction_powered,
    "ranking_agreement": _latex_ranking_agreement,
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
            "verdicts": verdict_display(report=report),
            "verdict_note": VERDICT_NOTE,
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
