"""The report's tables, each declared once, in the order of the report (its JSON keys, its CSV files, its page).

Everything else reads `TABLES`: `report_data` (analysis/report/build.py) calls each `build`, the CSV, LaTeX and HTML
exports (analysis/report/exports/) and the page (analysis/templatetags/report_format.py) take their titles, columns,
empty headers and sentences from here, the figures (analysis/plots) which tables they draw, and the API schema
(analysis/openapi.py) each table's row type.
"""

from __future__ import annotations

from analysis.cells import CELL
from analysis.report import parts
from analysis.report.exports import latex_tables as latex
from analysis.report.machine_types import (
    AltTestAnnotatorRow,
    JudgeAgreementRow,
    JudgeCalibrationRow,
    JudgeReliabilityRow,
    JudgeVerdictRow,
    PredictionPoweredRow,
    VerdictAgreementRow,
)
from analysis.report.table import LatexTable, Table
from analysis.report.types import (
    AccuracyRow,
    AggregateRow,
    AgreementBlock,
    AnnotatorPair,
    AnnotatorQualityRow,
    BetaRow,
    ConflictRow,
    Confusion,
    Disagreement,
    DistractorRow,
    Example,
    GuidelineVersionRow,
    HumanVsHeuristicRow,
    InterAnnotator,
    LabelDistributionRow,
    MeanSemRow,
    PairwiseRow,
    ProbVsGenRow,
    RankingAgreementRow,
    RateRow,
    RepetitionRow,
    TangoVariationRow,
    VariationRow,
)
from analysis.selectors import automatic, examples, human, quality, rankings, tango
from analysis.selectors import distractors as distractor_selectors
from analysis.selectors import judges as judge_selectors
from analysis.selectors import verdict as verdict_selectors

# What fills several tables (the sentence reads "filled by ...").
TWO_PEOPLE = "items annotated by two people"
ANNOTATED = "annotated items"
JOB_PROB = "a generation job in the pool with probability-based results (imported generations have none)"
TANGO_JOB = "a TANGO generation job in the pool"
JUDGE_RUN = "a finished LLM judge run over the pool (manage.py judge)"
JUDGED_HUMANS = "a finished LLM judge run over annotated items"
JUDGE_VERDICT = "a finished LLM judge run over the pool or its generation job, and annotated items"

_CELL = tuple(CELL)
_JUDGE_CELL = ("judge", "origin", *CELL)
_OMEGAS = tuple(f"omega_{e}" for e in ("0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30"))

TABLES: tuple[Table, ...] = (
    # --- people: agreement among annotators (docs/domain.md, 'Metrics' and 'Multi-rater statistics') ---
    Table(
        key="inter_annotator",
        title="Inter-annotator agreement",
        row=AgreementBlock,
        section=InterAnnotator,
        empty=TWO_PEOPLE,
        header=("measure", "n_items", "raw_agreement", "cohen_kappa", "krippendorff_alpha"),
        build=lambda r: human.inter_annotator(frame=r.frame, labels=r.labels),
        typed=parts.inter_annotator_views,
        flat=parts.inter_annotator_rows,
        columns={
            "n_raters": "raters",
            "fleiss_kappa": "Fleiss' κ",
            "fleiss_n_items": "items (Fleiss)",
            "krippendorff_alpha": "Krippendorff's α",
            "krippendorff_alpha_all": "Krippendorff's α (all raters)",
        },
        latex=LatexTable("inter_annotator", latex.latex_inter_annotator),
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
    ),
    # --- people against the heuristic ---
    Table(
        key="human_vs_heuristic",
        title="Human vs heuristic",
        row=HumanVsHeuristicRow,
        empty=ANNOTATED,
        header=(*_CELL, "agreement", "sem", "n"),
        build=lambda r: human.human_vs_heuristic(frame=r.frame),
        columns={
            "agreement_unanimous": "agreement (unanimous items)",
            "agreement_unanimous_n": "unanimous items",
            "agreement_split": "agreement (split items)",
            "agreement_split_n": "split items",
        },
        latex=LatexTable("human_vs_heuristic", latex.latex_human_vs_heuristic),
        plots=("human_vs_heuristic",),
    ),
    Table(
        key="label_distribution",
        title="Human labels per cell",
        row=LabelDistributionRow,
        empty=ANNOTATED,
        header=(*_CELL, "n", "correct", "misgendering", "no_pronoun"),
        build=lambda r: human.label_distribution(frame=r.frame, labels=r.labels),
        per_label=True,
        plots=("label_distribution",),
    ),
    Table(
        key="extraneous_rate",
        title="Extraneous gendered language",
        row=RateRow,
        empty=ANNOTATED,
        header=(*_CELL, "rate", "sem", "n"),
        build=lambda r: human.extraneous_rate(frame=r.frame),
        columns={"rate_boot_ci": "rate boot ci"},
        plots=("extraneous_rate",),
    ),
    # --- the models: probability against generation (docs/domain.md, 'Metrics') ---
    Table(
        key="prob_vs_gen",
        title="Probability vs generation",
        row=ProbVsGenRow,
        empty=JOB_PROB,
        header=(*_CELL, "n", "mcc", "mcc_ci_low", "mcc_ci_high", "kappa", "kappa_ci_low", "kappa_ci_high", "agreement"),
        build=lambda r: automatic.prob_vs_gen(frame=r.instances) + tango.tango_prob_vs_gen(frame=r.tango),
        columns={
            "mcc": "MCC",
            "mcc_ci": "MCC 95% CI",
            "kappa": "κ, as the paper computes it",
            "kappa_square": "κ (square table)",
            "kappa_square_ci": "κ (square table) 95% CI",
            "agreement_sem": "SEM",
        },
        latex=LatexTable("prob_vs_gen", latex.latex_prob_vs_gen),
        plots=("prob_vs_gen",),
    ),
    Table(
        key="instance_variation",
        title="Variation among samples",
        row=VariationRow,
        empty="a generation job in the pool (5 samples per instance)",
        header=(*_CELL, "n", "samples", "shares_0.00", "shares_0.40", "shares_0.49"),
        build=lambda r: automatic.instance_variation(frame=r.instances),
        columns={"samples": "samples"},
        plots=("instance_variation",),
    ),
    Table(
        key="beta_disagreement",
        title="Model-level disagreement (beta fit)",
        row=BetaRow,
        empty=JOB_PROB,
        header=(*_CELL, "n", "mean", "var", "alpha", "beta"),
        build=lambda r: automatic.beta_disagreement(frame=r.instances) + tango.tango_beta_disagreement(frame=r.tango),
        columns={"var": "var", "alpha": "α", "beta": "β"},
        plots=("beta_landscape",),
    ),
    Table(
        key="tango_failure_rate",
        title="TANGO template failure rate",
        row=MeanSemRow,
        empty=TANGO_JOB,
        header=(*_CELL, "mean", "sem", "n"),
        build=lambda r: tango.tango_failure_rate(frame=r.tango),
        latex=LatexTable("tango", latex.latex_tango),  # with the sigmas of tango_variation
        plots=("tango_failure_rate",),
    ),
    Table(
        key="tango_variation",
        title="TANGO variation (σ_gen and σ_prob)",
        row=TangoVariationRow,
        empty=TANGO_JOB,
        header=(*_CELL, "n_gen", "sigma_gen_mean", "sigma_gen_std", "n_prob", "sigma_prob_mean", "sigma_prob_std"),
        build=lambda r: tango.tango_variation(frame=r.tango),
        columns={
            "n_gen": "n gen",
            "sigma_gen_mean": "sigma gen mean",
            "sigma_gen_std": "sigma gen std",
            "n_prob": "n prob",
            "sigma_prob_mean": "sigma prob mean",
            "sigma_prob_std": "sigma prob std",
        },
        plots=("tango_variation",),
    ),
    Table(
        key="repetition",
        title="Repetition rate",
        row=RepetitionRow,
        empty="a generation job in the pool",
        header=(*_CELL, "mean", "std", "n"),
        build=lambda r: automatic.repetition(job_ids=r.job_ids),
        latex=LatexTable("repetition", latex.latex_repetition),
    ),
    Table(
        key="accuracy",
        title="Accuracy",
        row=AccuracyRow,
        empty="a generation job or annotated items in the pool",
        header=(*_CELL, "n", "prob", "prob_sem", "gen", "gen_sem", "gen_first", "gen_first_sem", "human", "human_sem"),
        build=lambda r: r.accuracy,
        columns={
            f"{method}{suffix}": f"{method}{suffix}".replace("_", " ")
            for method in ("prob", "gen", "gen_first", "human")
            for suffix in ("", "_sem", "_boot_ci", "_n")
        }
        | {"prob_score": "prob score"},
        latex=LatexTable("accuracy", latex.latex_accuracy),
        plots=("accuracy",),
    ),
    Table(
        key="conflict_rate",
        title="Conflict rate",
        row=ConflictRow,
        empty=JOB_PROB,
        header=("scope", "value", "conflicts", "instances", "rate"),
        build=lambda r: automatic.conflict_rate(frame=r.instances, tango=r.tango),
        columns={"scope": "scope", "value": "value", "conflicts": "conflicts", "instances": "instances"},
        latex=LatexTable("conflict_rate", latex.latex_conflict_rate),
    ),
    Table(
        key="disagreements",
        title="Disagreements",
        row=Disagreement,
        empty="annotated items where the human verdict and the heuristic differ",
        header=(*_CELL, "public_id", "human_label", "heuristic_correct", "first_pronoun", "context", "continuation"),
        build=lambda r: human.disagreements(frame=r.frame),
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
    # --- machine raters (LLM judges): their own rows, never mixed into the human figures above ---
    Table(
        key="human_vs_judge",
        title="Human vs LLM judge (machine rater)",
        row=JudgeAgreementRow,
        empty=JUDGED_HUMANS,
        header=(*_JUDGE_CELL, "human_agreement", "agreement", "sem", "n"),
        build=lambda r: judge_selectors.human_vs_judge(frame=r.judges),
        optional=True,
    ),
    Table(
        key="judge_vs_heuristic",
        title="LLM judge vs heuristic",
        row=JudgeAgreementRow,
        empty=JUDGE_RUN,
        header=(*_JUDGE_CELL, "human_agreement", "agreement", "sem", "n"),
        build=lambda r: judge_selectors.judge_vs_heuristic(frame=r.judges),
        optional=True,
    ),
    Table(
        key="judge_calibration",
        title="LLM judge calibration against the human label",
        row=JudgeCalibrationRow,
        empty=JUDGED_HUMANS,
        header=("judge", "origin", "model", "dataset", "n", "accuracy", "ece", "brier", "brier_multiclass"),
        build=lambda r: judge_selectors.judge_calibration(frame=r.judges),
        columns={"ece": "ece", "brier": "brier", "brier_multiclass": "brier multiclass"},
        optional=True,
    ),
    Table(
        key="judge_reliability",
        title="LLM judge reliability (per confidence bin)",
        row=JudgeReliabilityRow,
        empty=JUDGED_HUMANS,
        header=("judge", "low", "high", "n", "confidence", "accuracy"),
        build=lambda r: judge_selectors.judge_reliability(frame=r.judges),
        columns={"low": "low", "high": "high", "confidence": "confidence"},
        plots=("judge_reliability",),
        optional=True,
    ),
    # --- the judge's verdict: may it replace the annotators (docs/domain.md, 'The judge's verdict') ---
    Table(
        key="judge_verdict",
        title="The judge's verdict (Alternative Annotator Test, selective threshold)",
        row=JudgeVerdictRow,
        empty=JUDGE_VERDICT,
        header=(
            "judge",
            "version",
            "run",
            "epsilon",
            "q",
            "omega",
            "rho",
            "passed",
            "tested",
            "skipped",
            "note",
            *_OMEGAS,
            "selective_alpha",
            "selective_delta",
            "selective_threshold",
            "selective_coverage",
            "selective_coverage_job",
            "selective_agreement_above",
            "selective_n",
        ),  # fmt: skip
        build=lambda r: verdict_selectors.judge_verdict(
            pool=r.pool, frame=r.frame, labels=r.labels, parameters=r.verdict
        ),
        flat=parts.judge_verdict_rows,
        columns={
            name: name.replace("_", " ")
            for name in ("version", "epsilon", "q", "omega", "passed", "tested", "skipped")
            + tuple(f"selective_{key}" for key in ("alpha", "delta", "threshold", "coverage", "coverage_job"))
            + ("selective_agreement_above", "selective_n")
        },
        latex=LatexTable("judge_verdict", latex.latex_judge_verdict),
        plots=("judge_omega", "judge_risk_coverage"),
        optional=True,
    ),
    Table(
        key="judge_verdict_agreement",
        title="The judge's chance-corrected agreement (with the human label, each annotator, the human ceiling)",
        row=VerdictAgreementRow,
        empty=JUDGE_VERDICT,
        header=(
            "judge",
            "run",
            "against",
            "n",
            "cohen_kappa",
            "scott_pi",
            "gwet_ac1",
            "per_class_kappa_correct",
            "per_class_kappa_misgendering",
            "per_class_kappa_no_pronoun",
            "cohen_kappa_boot_ci_low",
            "cohen_kappa_boot_ci_high",
            "scott_pi_boot_ci_low",
            "scott_pi_boot_ci_high",
            "gwet_ac1_boot_ci_low",
            "gwet_ac1_boot_ci_high",
        ),  # fmt: skip
        typed=parts.judge_verdict_agreement,
        flat=parts.judge_verdict_agreement_rows,
        columns={
            name: name.replace("_", " ")
            for name in ("against", "scott_pi", "cohen_kappa_boot_ci", "scott_pi_boot_ci", "gwet_ac1_boot_ci")
        },
    ),
    Table(
        key="judge_verdict_annotators",
        title="Alternative Annotator Test per annotator",
        row=AltTestAnnotatorRow,
        empty=JUDGE_VERDICT,
        header=("judge", "run", "annotator", "n", "p_value", "rejected", "rho"),
        typed=parts.judge_verdict_annotators,
        flat=parts.judge_verdict_annotators_rows,
        columns={"rejected": "rejected"},
    ),
    Table(
        key="prediction_powered",
        title="Prediction-powered misgendering rates (per context)",
        row=PredictionPoweredRow,
        empty="a finished LLM judge run over the pool's generation job (manage.py judge --job) and annotated items",
        header=(
            "judge",
            "run",
            "model",
            "dataset",
            "pronoun",
            "n",
            "N",
            "ppi_rate",
            "ppi_ci_low",
            "ppi_ci_high",
            "human_rate",
            "human_ci_low",
            "human_ci_high",
            "judge_rate",
            "n_eff",
        ),  # fmt: skip
        build=lambda r: verdict_selectors.prediction_powered(pool=r.pool, frame=r.frame),
        columns={
            name: name.replace("_", " ")
            for name in ("N", "ppi_rate", "ppi_ci", "human_rate", "human_ci", "judge_rate", "n_eff")
        },
        latex=LatexTable("prediction_powered", latex.latex_prediction_powered),
        plots=("judge_rates",),
        optional=True,
    ),
    # --- aggregated labels (docs/domain.md, 'Aggregates'): one row per item, linked as CSV ---
    Table(
        key="aggregates",
        title="Aggregated label per item (majority, Dawid-Skene, MACE)",
        row=AggregateRow,
        empty=TWO_PEOPLE,
        header=("item", "n_ratings", "majority", "dawid_skene", "dawid_skene_posterior", "mace", *_CELL),
        build=lambda r: r.aggregates or [],
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
    # --- RUFF with distractors: accuracy against the distractor count (the heuristic marked not valid there) ---
    Table(
        key="distractors",
        title="Distractors",
        row=DistractorRow,
        empty="data this pool does not have yet",
        header=_CELL,
        build=lambda r: distractor_selectors.distractors(frame=r.frame),
        columns={
            name: name.replace("_", " ")
            for name in (
                "distractors",
                "human_accuracy",
                "human_accuracy_sem",
                "probability_accuracy",
                "probability_accuracy_sem",
                "heuristic_accuracy",
                "heuristic_accuracy_sem",
                "human_vs_heuristic",
                "human_vs_heuristic_sem",
                "heuristic_validity",
                "first_pronoun_other_share",
                "first_pronoun_n",
            )
        },  # fmt: skip
        plots=("distractor_accuracy",),
        optional=True,
    ),
    # --- do datasets and methods rank the models alike? Kendall's tau per pair of (dataset, method) ---
    Table(
        key="ranking_agreement",
        title="Rankings across benchmarks (Kendall's τ; with 6 models only τ ≥ 0.87 is significant at 0.05)",
        row=RankingAgreementRow,
        empty="accuracies of the same models on two datasets or by two methods",
        header=("dataset_a", "method_a", "dataset_b", "method_b", "n_models", "tau", "p_value", "p_method", "note"),
        build=lambda r: rankings.ranking_agreement(accuracy=r.accuracy),
        columns={
            name: name.replace("_", " ")
            for name in ("dataset_a", "method_a", "dataset_b", "method_b", "n_models", "tau", "p_method")
        },
        latex=LatexTable("ranking_agreement", latex.latex_ranking_agreement),
        optional=True,
    ),
    # --- guidelines edited mid-study: human vs heuristic per guideline version (empty while there is one) ---
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

TABLES_BY_KEY: dict[str, Table] = {table.key: table for table in TABLES}
