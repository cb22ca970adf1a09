"""The tables of what people said: agreement among annotators, people against the heuristic, the items and
the annotators, aggregated labels. Composed in the report's order in __init__.py."""

from __future__ import annotations

from typing import cast

from analysis.cells import CELL
from analysis.report import parts
from analysis.report.exports import latex_tables as latex
from analysis.report.table import LatexTable, Table, TablePart
from analysis.report.types import (
    AggregateRow,
    AgreementBlock,
    AnnotatorPair,
    AnnotatorQualityRow,
    Confusion,
    Disagreement,
    Example,
    GuidelineVersionRow,
    HumanVsHeuristicRow,
    InterAnnotator,
    LabelDistributionRow,
    PairwiseRow,
    RateRow,
)
from analysis.selectors import examples, human, quality
from annotation.labelset import positive_label
from annotation.schema import MISGENDERING

TWO_PEOPLE = "items annotated by two people"
ANNOTATED = "annotated items"


# Agreement among annotators (docs/domain.md, 'Metrics' and 'Multi-rater statistics').
AGREEMENT = (
    Table(
        key="inter_annotator",
        title="Inter-annotator agreement",
        row=AgreementBlock,
        section=InterAnnotator,
        empty=TWO_PEOPLE,
        header=("measure", "n_items", "raw_agreement", "cohen_kappa", "krippendorff_alpha"),
        build_one=lambda r: human.inter_annotator(
            frame=r.frame, labels=r.labels, positive=positive_label(r.pool) or MISGENDERING, scale=r.pool.scale
        ),
        typed=parts.inter_annotator_views,
        flat=parts.inter_annotator_rows,
        columns={
            "n_raters": "raters",
            "fleiss_kappa": "Fleiss' κ",
            "fleiss_n_items": "items (Fleiss)",
            "krippendorff_alpha": "Krippendorff's α",
            "krippendorff_alpha_all": "Krippendorff's α (all raters)",
            "light_pairs": "annotator pairs (Light's κ)",
            "pairwise_note": "pairs per annotator pair",
        },
        latex=LatexTable("inter_annotator", latex.latex_inter_annotator),
        # Split on the page so that each part fits it: the headline figures over every pair of annotations
        # (docs/domain.md, "Headline figures"), then the figures over every rater.
        parts=(
            TablePart("inter_annotator", "Inter-annotator agreement (every pair of annotations)"),
            TablePart(
                "inter_annotator_all",
                "Inter-annotator agreement (all raters)",
                (
                    "n_raters",
                    "fleiss_kappa",
                    "fleiss_n_items",
                    "gwet_ac1",
                    "gwet_ac1_ci_low",
                    "gwet_ac1_ci_high",
                    "krippendorff_alpha_all",
                    "pairwise_note",
                ),
            ),
        ),  # fmt: skip
    ),
    Table(
        key="confusion",
        title="Label confusion (rows: first annotator, columns: second)",
        row=Confusion,
        empty=TWO_PEOPLE,
        header=("first_annotator", "correct", "misgendering", "no_pronoun"),
        typed=parts.confusion,
        flat=parts.confusion_rows,
        per_label=True,
        columns={"first_annotator": "first annotator"},
    ),
    Table(
        key="annotator_pairs",
        title="Annotator pairs (first and second annotator)",
        row=AnnotatorPair,
        empty=TWO_PEOPLE,
        header=("annotator_1", "annotator_2", "n_items", "agreement"),
        typed=parts.annotator_pairs,
        flat=parts.annotator_pairs_rows,
    ),
    Table(
        key="pairwise",
        title="Agreement per annotator pair",
        row=PairwiseRow,
        empty=TWO_PEOPLE,
        header=("measure", "annotator_1", "annotator_2", "n_items", "raw_agreement", "cohen_kappa"),
        typed=parts.pairwise,
        flat=parts.pairwise_rows,
        note=parts.pairwise_note,
    ),
)

# People against the heuristic, per cell.
AGAINST_HEURISTIC = (
    Table(
        key="human_vs_heuristic",
        title="Human vs heuristic",
        row=HumanVsHeuristicRow,
        empty=ANNOTATED,
        header=(*CELL, "agreement", "sem", "n"),
        build=lambda r: human.human_vs_heuristic(frame=r.frame),
        columns={
            "agreement_unanimous": "agreement (unanimous items)",
            "agreement_unanimous_n": "unanimous items",
            "agreement_split": "agreement (split items)",
            "agreement_split_n": "split items",
        },
        latex=LatexTable("human_vs_heuristic", latex.latex_human_vs_heuristic),
    ),
    Table(
        key="label_distribution",
        title="Human labels per cell",
        row=LabelDistributionRow,
        empty=ANNOTATED,
        header=(*CELL, "n", "correct", "misgendering", "no_pronoun"),
        build=lambda r: human.label_distribution(frame=r.frame, labels=r.labels),
        per_label=True,
    ),
    Table(
        key="extraneous_rate",
        title="Extraneous gendered language",
        row=RateRow,
        empty=ANNOTATED,
        header=(*CELL, "rate", "sem", "n"),
        build=lambda r: human.extraneous_rate(frame=r.frame),
        columns={"rate_boot_ci": "rate boot ci"},
    ),
)

# The items behind the figures, and the annotators.
ITEMS = (
    Table(
        key="disagreements",
        title="Disagreements",
        row=Disagreement,
        empty="annotated items where the human verdict and the heuristic differ",
        header=(*CELL, "public_id", "human_label", "heuristic_correct", "first_pronoun", "context", "continuation"),
        build=lambda r: human.disagreements(frame=r.frame),
        columns={"sample_index": "sample"},
        shown=False,  # a section of its own (templates/analysis/_disagreements.html)
    ),
    Table(
        key="examples",
        title="Examples",
        row=Example,
        empty=ANNOTATED,
        header=(
            "kind",
            "dataset",
            "setting",
            "model",
            "pronoun",
            "public_id",
            "context",
            "continuation",
            "human_label",
        ),
        build=lambda r: examples.examples(frame=r.frame, seed=r.examples_seed),
        latex=LatexTable("examples", latex.latex_examples),
        columns={"kind": "kind", "candidates": "candidates", "choices": "choices"},
        shown=False,  # a section of its own (templates/analysis/_examples.html)
    ),
    Table(
        key="annotator_quality",
        title="Annotator quality",
        row=AnnotatorQualityRow,
        empty="annotations",
        header=("annotator", "items", "gold_n", "gold_correct", "gold_accuracy", "median_seconds", "fast_share"),
        build=lambda r: quality.annotator_quality(pool=r.pool),
        columns={
            "items": "items",
            "gold_n": "gold items",
            "gold_correct": "gold correct",
            "gold_accuracy": "gold accuracy",
            "median_seconds": "median seconds",
            "fast_share": "fast share",
            "agreement_n": "comparisons",
        },
    ),
)

# Aggregated labels (docs/domain.md, 'Aggregates'): one row per item, linked as CSV.
AGGREGATES = (
    Table(
        key="aggregates",
        title="Aggregated label per item (majority, Dawid-Skene, MACE)",
        row=AggregateRow,
        empty=TWO_PEOPLE,
        header=("item", "n_ratings", "majority", "dawid_skene", "dawid_skene_posterior", "mace", *CELL),
        build=lambda r: cast(list[AggregateRow], r.aggregates or []),  # annotation's aggregates, typed here
        columns={
            "item": "item",
            "n_ratings": "ratings",
            "majority": "majority",
            "dawid_skene": "Dawid-Skene",
            "dawid_skene_posterior": "Dawid-Skene posterior",
            "mace": "MACE",
        },
        shown=False,
    ),
)

# Guidelines edited mid-study: human vs heuristic per guideline version (empty while there is one).
GUIDELINES = (
    Table(
        key="by_guideline_version",
        title="Human vs heuristic per guideline version",
        row=GuidelineVersionRow,
        empty="annotations saved under two or more versions of the pool's guidelines",
        header=("guideline_version", "n", "agreement", "sem"),
        build=lambda r: human.by_guideline_version(pool=r.pool),
        columns={"guideline_version": "guideline version"},
        optional=True,
    ),
)
