"""The tables of what people said: agreement among annotators, people against the heuristic, the items and
the annotators, aggregated labels. Composed in the report's order in __init__.py."""

from __future__ import annotations

from typing import cast

from analysis.cells import CELL
from analysis.report import parts
from analysis.report.exports import latex_tables as latex
from analysis.report.exports.tex import _ci, _mean_sem
from analysis.report.table import CELL_COLUMNS, C, Column, LatexTable, Table, TablePart, Tex, millis, spaced
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
        columns=(
            C("measure"),
            C("n_items"),
            C("raw_agreement"),
            C("cohen_kappa"),
            Column("krippendorff_alpha", "Krippendorff's α"),
            Column("n_raters", "raters", header=False),
            Column("fleiss_kappa", "Fleiss' κ", header=False),
            Column("fleiss_n_items", "items (Fleiss)", header=False),
            Column("krippendorff_alpha_all", "Krippendorff's α (all raters)", header=False),
            Column("light_pairs", "annotator pairs (Light's κ)", header=False),
            Column("pairwise_note", "pairs per annotator pair", header=False),
        ),
        build_one=lambda r: human.inter_annotator(
            frame=r.frame, labels=r.labels, positive=positive_label(r.pool) or MISGENDERING, scale=r.pool.scale
        ),
        typed=parts.inter_annotator_views,
        flat=parts.inter_annotator_rows,
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
        columns=(
            *spaced("first_annotator", kind="label"),
            *spaced("correct", "misgendering", "no_pronoun", kind="count"),
        ),
        typed=parts.confusion,
        flat=parts.confusion_rows,
        per_label=True,
    ),
    Table(
        key="annotator_pairs",
        title="Annotator pairs (first and second annotator)",
        row=AnnotatorPair,
        empty=TWO_PEOPLE,
        columns=(
            C("annotator_1"),
            C("annotator_2"),
            C("n_items"),
            C("agreement"),
        ),
        typed=parts.annotator_pairs,
        flat=parts.annotator_pairs_rows,
    ),
    Table(
        key="pairwise",
        title="Agreement per annotator pair",
        row=PairwiseRow,
        empty=TWO_PEOPLE,
        columns=(
            C("measure"),
            C("annotator_1"),
            C("annotator_2"),
            C("n_items"),
            C("raw_agreement"),
            C("cohen_kappa"),
        ),
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
        columns=(
            *CELL_COLUMNS,
            C("agreement", latex=Tex("Agreement", lambda r: _mean_sem(r["agreement"], r["sem"]))),
            C("sem"),
            C("n", latex=Tex("Items")),
            C("agreement_boot_ci", header=False, latex=Tex("95% CI", lambda r: _ci(r.get("agreement_boot_ci")))),
            Column(
                "agreement_unanimous",
                "agreement (unanimous items)",
                header=False,
                latex=Tex("Unanimous", latex.with_items("agreement_unanimous")),
            ),
            Column("agreement_unanimous_n", "unanimous items", header=False),
            Column(
                "agreement_split",
                "agreement (split items)",
                header=False,
                latex=Tex("Split", latex.with_items("agreement_split")),
            ),
            Column("agreement_split_n", "split items", header=False),
        ),
        build=lambda r: human.human_vs_heuristic(frame=r.frame),
        latex=LatexTable(
            "human_vs_heuristic", caption=latex.HUMAN_VS_HEURISTIC_CAPTION, columns=(*CELL, "n", "agreement")
        ),
    ),
    Table(
        key="label_distribution",
        title="Human labels per cell",
        row=LabelDistributionRow,
        empty=ANNOTATED,
        columns=(
            *CELL_COLUMNS,
            C("n"),
            *spaced("correct", "misgendering", "no_pronoun", kind="count"),
        ),
        build=lambda r: human.label_distribution(frame=r.frame, labels=r.labels),
        per_label=True,
    ),
    Table(
        key="extraneous_rate",
        title="Extraneous gendered language",
        row=RateRow,
        empty=ANNOTATED,
        columns=(
            *CELL_COLUMNS,
            C("rate"),
            C("sem"),
            C("n"),
            *spaced("rate_boot_ci", header=False),
        ),
        build=lambda r: human.extraneous_rate(frame=r.frame),
    ),
)

# The items behind the figures, and the annotators.
ITEMS = (
    Table(
        key="disagreements",
        title="Disagreements",
        row=Disagreement,
        empty="annotated items where the human verdict and the heuristic differ",
        columns=(
            *CELL_COLUMNS,
            C("public_id"),
            C("human_label", kind="label"),
            C("heuristic_correct"),
            C("first_pronoun"),
            C("context"),
            C("continuation"),
            Column("sample_index", "sample", header=False),
        ),
        build=lambda r: human.disagreements(frame=r.frame),
        shown=False,  # a section of its own (templates/analysis/_disagreements.html)
    ),
    Table(
        key="examples",
        title="Examples",
        row=Example,
        empty=ANNOTATED,
        columns=(
            Column("kind", "kind"),
            C("dataset"),
            C("setting"),
            C("model"),
            C("pronoun"),
            C("public_id"),
            C("context"),
            C("continuation"),
            C("human_label", kind="label"),
            *spaced("candidates", "choices", header=False),
        ),
        build=lambda r: examples.examples(frame=r.frame, seed=r.examples_seed),
        latex=LatexTable("examples", latex.latex_examples),
        shown=False,  # a section of its own (templates/analysis/_examples.html)
    ),
    Table(
        key="annotator_quality",
        title="Annotator quality",
        row=AnnotatorQualityRow,
        empty="annotations",
        columns=(
            C("annotator"),
            Column("items", "items"),
            Column("gold_n", "gold items"),
            *spaced("gold_correct", "gold_accuracy"),
            Column("median_seconds", "median seconds", csv=millis),
            Column("fast_share", "fast share"),
            Column("agreement_n", "comparisons", header=False),
        ),
        build=lambda r: quality.annotator_quality(pool=r.pool),
    ),
)

# Aggregated labels (docs/domain.md, 'Aggregates'): one row per item, linked as CSV.
AGGREGATES = (
    Table(
        key="aggregates",
        title="Aggregated label per item (majority, Dawid-Skene, MACE)",
        row=AggregateRow,
        empty=TWO_PEOPLE,
        columns=(
            Column("item", "item"),
            Column("n_ratings", "ratings"),
            Column("majority", "majority", kind="label"),
            Column("dawid_skene", "Dawid-Skene", kind="label"),
            Column("dawid_skene_posterior", "Dawid-Skene posterior"),
            Column("mace", "MACE", kind="label"),
            C("model"),
            C("dataset"),
            C("setting"),
            C("pronoun"),
        ),
        build=lambda r: cast(list[AggregateRow], r.aggregates or []),  # annotation's aggregates, typed here
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
        columns=(
            *spaced("guideline_version"),
            C("n"),
            C("agreement"),
            C("sem"),
        ),
        build=lambda r: human.by_guideline_version(pool=r.pool),
        optional=True,
    ),
)
