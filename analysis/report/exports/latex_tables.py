"""The LaTeX of the report's tables (analysis/report/tables/), booktabs, with words for headings (the CSV keeps the
keys) and captions that say what each figure is: the captions and joined cells of the tables declared with their
LaTeX columns, and the tables whose shape is not one row per row (inter-annotator, examples, TANGO), written whole."""

from __future__ import annotations

import re
from collections.abc import Callable

from analysis.report.exports.tex import (
    CELL_HEADINGS,
    KAPPA_BEYOND_NOTE,
    PM,
    Latex,
    _cell,
    _fmt,
    _interval,
    _mean_sem,
    kappa_ci_beyond_bounds,
    latex_escape,
    latex_join,
    latex_label,
    latex_table,
)
from analysis.report.parts import INTER_ANNOTATOR_VIEWS, label_text
from annotation.schema import CORRECT, MISGENDERING


def latex_inter_annotator(report: dict) -> str:
    inter = report["inter_annotator"]
    return latex_table(
        "Inter-annotator agreement on the overlap items: raw agreement over every pair of an item's annotations with "
        "its bootstrap 95% CI, Cohen's kappa on the square table over the label set (two annotations per item, by "
        "annotator; else Light's, the mean over annotator pairs sharing 30 items) and Krippendorff's alpha over all "
        "raters; Gwet's AC1 and Fleiss' kappa over every annotation, each item with its own number of raters.",
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
                INTER_ANNOTATOR_VIEWS.get(m, m),
                str(inter[m]["n_items"]),
                _interval(inter[m]["raw_agreement"], inter[m].get("raw_agreement_boot_ci")),
                _interval(inter[m]["cohen_kappa"], inter[m]["kappa_ci"]),
                _fmt(inter[m]["krippendorff_alpha"]),
                _interval(inter[m].get("gwet_ac1"), inter[m].get("gwet_ac1_ci")),
                _fmt(inter[m].get("fleiss_kappa")),
            ]
            for m in INTER_ANNOTATOR_VIEWS
            if inter[m]["n_items"]
        ],
        label=latex_label("inter_annotator"),
    )


# The tables declared with their LaTeX columns (analysis/report/tables/): their captions and the cells that join
# several figures of a row.

HUMAN_VS_HEURISTIC_CAPTION = latex_join(
    "Human vs heuristic agreement (mean ",
    PM,
    " SEM, bootstrap 95% CI), and on the items whose annotators were unanimous or split (items in brackets).",
)


def mean_sem_of(key: str) -> Callable[[dict], Latex]:
    """The cell of figure `key` with its SEM (`<key>_sem`)."""
    return lambda row: _mean_sem(row[key], row[f"{key}_sem"])


def with_items(key: str) -> Callable[[dict], str]:
    """The cell of figure `key` with its count of items in brackets (`<key>_n`)."""
    return lambda row: f"{_fmt(row.get(key))} ({row.get(f'{key}_n', 0)})"


DAGGER = Latex(r"$^\dagger$")


def prob_vs_gen_caption(report: dict) -> Latex:
    caption = latex_join(
        "Probability vs first-sample generation agreement: MCC and Cohen's kappa with 95% CIs; kappa as the paper "
        "computes it (a one-sided table when one side is constant) and beside it on the square 2x2 table."
    )
    if any(kappa_ci_beyond_bounds(r["kappa_ci"]) for r in report["prob_vs_gen"]):
        caption = latex_join(caption, " ", DAGGER, " An interval " + KAPPA_BEYOND_NOTE)
    return caption


def kappa_marked(row: dict) -> Latex:
    """The paper's kappa with its interval, marked where the interval reaches past [-1, 1]."""
    return latex_join(
        _interval(row["kappa"], row["kappa_ci"]), DAGGER if kappa_ci_beyond_bounds(row["kappa_ci"]) else ""
    )


PROB_SCORE_NAMES = {"mean": "mean token loss", "sum": "summed log-probability"}


def accuracy_caption(report: dict) -> Latex:
    scores = sorted({r["prob_score"] for r in report["accuracy"] if r.get("prob_score")})
    return latex_join(
        "Accuracy per cell (mean ",
        PM,
        " SEM): probability-based, generation-based over all samples and over the "
        "first sample, and the human verdict on the pool's items.",
        # docs/domain.md, 'Probability scoring: mean or sum': the jobs' choice labels the probability figures
        f" Probability scoring: {', '.join(PROB_SCORE_NAMES.get(x, x) for x in scores)}." if scores else "",
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


def latex_examples(report: dict) -> str:
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
        latex_table(
            EXAMPLE_CAPTIONS[kind].format(table=f"{dataset} {setting}", seed=report.get("examples_seed")),
            ["model", "pronoun", "example", "human", "heuristic"],
            body,
            label=latex_label("examples", kind, dataset, setting),
            spec="llp{0.55\\linewidth}ll",
        )
        for (kind, dataset, setting), body in tables.items()
    )


def latex_tango(report: dict) -> str:
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
    return latex_table(
        latex_join(
            "TANGO: template failure rate (mean ", PM, " SEM) and instance-level variation (mean ", PM, " std)."
        ),
        [*CELL_HEADINGS, "Instances", "Failure rate", Latex(r"$\sigma_{gen}$"), Latex(r"$\sigma_{prob}$")],
        body,
        label=latex_label("tango"),
    )
