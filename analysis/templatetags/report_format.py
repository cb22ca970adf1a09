"""Presentation of report tables on the page and in the standalone HTML (docs/domain.md, 'Reports and figures'): human headings
and column names, numbers to 3 decimals, intervals as [low, high] in one column, numeric cells right-aligned."""

from __future__ import annotations

import re

from django import template

from analysis.exports import KAPPA_BEYOND_MARK, KAPPA_BEYOND_NOTE, kappa_ci_beyond_bounds
from annotation.schema import label_display

register = template.Library()

TABLE_TITLES = {
    "inter_annotator": "Inter-annotator agreement",
    "confusion": "Label confusion (rows: first annotator, columns: second)",
    "annotator_pairs": "Annotator pairs (first and second annotator)",
    "pairwise": "Agreement per annotator pair",
    "human_vs_heuristic": "Human vs heuristic",
    "label_distribution": "Human labels per cell",
    "extraneous_rate": "Extraneous gendered language",
    "prob_vs_gen": "Probability vs generation",
    "instance_variation": "Variation among samples",
    "beta_disagreement": "Model-level disagreement (beta fit)",
    "repetition": "Repetition rate",
    "accuracy": "Accuracy",
    "conflict_rate": "Conflict rate",
    "annotator_quality": "Annotator quality",
    "tango_failure_rate": "TANGO template failure rate",
    "tango_variation": "TANGO variation (σ_gen and σ_prob)",
    "aggregates": "Aggregated label per item (majority, Dawid-Skene, MACE)",
    "human_vs_judge": "Human vs LLM judge (machine rater)",
    "judge_vs_heuristic": "LLM judge vs heuristic",
    "judge_calibration": "LLM judge calibration against the human label",
    "judge_reliability": "LLM judge reliability (per confidence bin)",
    "judge_verdict": "The judge's verdict (Alternative Annotator Test, selective threshold)",
    "judge_verdict_agreement": "The judge's chance-corrected agreement (with the human label, each annotator, the human ceiling)",
    "judge_verdict_annotators": "Alternative Annotator Test per annotator",
    "prediction_powered": "Prediction-powered misgendering rates (per context)",
    "ranking_agreement": "Rankings across benchmarks (Kendall's τ; with 6 models only τ ≥ 0.87 is significant at 0.05)",
    "by_guideline_version": "Human vs heuristic per guideline version",
}

COLUMN_TITLES = {
    "n": "n",
    "n_items": "items",
    "n_raters": "raters",
    "raw_agreement": "raw agreement",
    "raw_agreement_sem": "SEM",
    "agreement_sem": "SEM",
    "sem": "SEM",
    "cohen_kappa": "Cohen's κ",
    "kappa": "κ, as the paper computes it",
    "kappa_ci": "κ 95% CI",
    "mcc": "MCC",
    "mcc_ci": "MCC 95% CI",
    "krippendorff_alpha": "Krippendorff's α",
    "krippendorff_alpha_all": "Krippendorff's α (all raters)",
    "fleiss_kappa": "Fleiss' κ",
    "fleiss_n_items": "items (Fleiss)",
    "first_annotator": "first annotator",
    "annotator_1": "annotator 1",
    "annotator_2": "annotator 2",
    "gold_n": "gold items",
    "gold_correct": "gold correct",
    "gold_accuracy": "gold accuracy",
    "median_seconds": "median seconds",
    "fast_share": "fast share",
    "agreement_n": "comparisons",
    "std": "std",
    "alpha": "α",
    "beta": "β",
    "gwet_ac1": "Gwet's AC1",
    "gwet_ac1_ci": "AC1 95% CI",
    "kappa_square": "κ (square table)",
    "kappa_square_ci": "κ (square table) 95% CI",
    "raw_agreement_boot_ci": "bootstrap 95% CI",
    "agreement_boot_ci": "bootstrap 95% CI",
    "agreement_unanimous": "agreement (unanimous items)",
    "agreement_unanimous_n": "unanimous items",
    "agreement_split": "agreement (split items)",
    "agreement_split_n": "split items",
    "dawid_skene": "Dawid-Skene",
    "dawid_skene_posterior": "Dawid-Skene posterior",
    "mace": "MACE",
    "n_ratings": "ratings",
    "guideline_version": "guideline version",
}

NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
MEASURES = {
    "pronoun_label": "pronoun label",
    "pronoun_binary": "misgendering or not",
    "extraneous": "extraneous flag",
}
# The inter-annotator table is split in two so that each fits the page: the first two annotations of every overlap
# item, then the figures over every rater.
ALL_RATERS = [
    "n_raters",
    "fleiss_kappa",
    "fleiss_n_items",
    "gwet_ac1",
    "gwet_ac1_ci_low",
    "gwet_ac1_ci_high",
    "krippendorff_alpha_all",
]


@register.filter
def label_name(label: object) -> str:
    """One spelling per label wherever it is shown: `no_pronoun` reads "no pronoun"."""
    return label_display(label)


@register.filter
def table_total(table: dict[str, dict[str, int]]) -> int:
    """The count in a confusion table: 0 means it has nothing to show (a sentence replaces its zeros)."""
    return sum(sum(counts.values()) for counts in table.values())


@register.filter
def table_title(name: str) -> str:
    return TABLE_TITLES.get(name) or name.replace("_", " ").capitalize()


def column_title(name: str) -> str:
    if name in COLUMN_TITLES:
        return COLUMN_TITLES[name]
    if name.startswith("shares_"):
        return f"σ = {name.removeprefix('shares_')}"
    return name.replace("_", " ")


@register.filter
def presented_all(tables: list[dict]) -> list[dict]:
    """Every display table presented, the inter-annotator one split into its two-rater and all-rater parts."""
    result = []
    for table in tables:
        if table["name"] == "inter_annotator" and any(c in table["columns"] for c in ALL_RATERS):
            first_two = [c for c in table["columns"] if c not in ALL_RATERS]
            every = ["measure", *(c for c in ALL_RATERS if c in table["columns"])]
            for columns, name, title in (
                (first_two, "inter_annotator", "Inter-annotator agreement (first two annotations)"),
                (every, "inter_annotator_all", "Inter-annotator agreement (all raters)"),
            ):
                part = {
                    "fills": table.get("fills", ""),
                    "name": name,
                    "columns": columns,
                    "rows": [[row[table["columns"].index(c)] for c in columns] for row in table["rows"]],
                }
                result.append({**presented(part), "title": title, "csv": "inter_annotator"})
        else:
            result.append(presented(table))
    return result


@register.filter
def presented(table: dict) -> dict:
    """A display table (`name`, `columns`, `rows` of strings) with `<x>_low`/`<x>_high` merged into one `[low, high]`
    column, human column names, and each cell marked numeric or not."""
    columns = list(table["columns"])
    merged: list[tuple[str, list[int]]] = []
    skip: set[int] = set()
    for i, column in enumerate(columns):
        if i in skip:
            continue
        if column.endswith("_low") and f"{column.removesuffix('_low')}_high" in columns:
            j = columns.index(f"{column.removesuffix('_low')}_high")
            skip.add(j)
            merged.append((column.removesuffix("_low"), [i, j]))
        else:
            merged.append((column, [i]))
    rows = []
    marked = False
    for row in table["rows"]:
        cells = []
        for name, indices in merged:
            if len(indices) == 2:
                low, high = row[indices[0]], row[indices[1]]
                text = "—" if "—" in (low, high) else f"[{low}, {high}]"
                if table["name"] == "prob_vs_gen" and name == "kappa_ci" and _beyond(low, high):
                    text, marked = f"{text} {KAPPA_BEYOND_MARK}", True
                cells.append({"text": text, "num": text != "—"})
            else:
                text = row[indices[0]]
                if merged[len(cells)][0] == "measure":
                    text = MEASURES.get(text, text)
                cells.append({"text": text, "num": bool(NUMBER.match(text)) or text == "—"})
        rows.append(cells)
    return {
        "name": table["name"],
        "csv": table["name"],
        "fills": table.get("fills", ""),
        "title": table_title(table["name"]),
        "columns": [{"name": name, "title": column_title(name), "num": None} for name, _ in merged],
        "rows": rows,
        "note": f"{KAPPA_BEYOND_MARK} {KAPPA_BEYOND_NOTE}" if marked else "",
    }


def _beyond(low: str, high: str) -> bool:
    """Whether a displayed kappa interval reaches past [-1, 1]."""
    try:
        return kappa_ci_beyond_bounds([float(low), float(high)])
    except ValueError:
        return False


@register.filter
def presented_empty(tables: list[dict]) -> list[dict]:
    """The tables without rows, each with what would fill it: the page lists them instead of printing them empty."""
    return [table for table in presented_all(tables) if not table["rows"]]
