"""The tables of the models' results: probability against generation, variation, TANGO, repetition, accuracy,
conflicts, distractors and the rankings across benchmarks. Composed in the report's order in __init__.py."""

from __future__ import annotations

from analysis.cells import CELL
from analysis.report.exports import latex_tables as latex
from analysis.report.table import LatexTable, Table, TablePart
from analysis.report.types import (
    AccuracyRow,
    BetaRow,
    ConflictRow,
    DistractorRow,
    MeanSemRow,
    ProbVsGenRow,
    RankingAgreementRow,
    RepetitionRow,
    TangoVariationRow,
    VariationRow,
)
from analysis.selectors import automatic, rankings, tango
from analysis.selectors import distractors as distractor_selectors

JOB_PROB = "a generation job in the pool with probability-based results (imported generations have none)"
TANGO_JOB = "a TANGO generation job in the pool"


# The models: probability against generation, variation, TANGO, repetition, accuracy (docs/domain.md, 'Metrics').
MODELS = (
    Table(
        key="prob_vs_gen",
        title="Probability vs generation",
        row=ProbVsGenRow,
        empty=JOB_PROB,
        header=(*CELL, "n", "mcc", "mcc_ci_low", "mcc_ci_high", "kappa", "kappa_ci_low", "kappa_ci_high", "agreement"),
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
    ),
    Table(
        key="instance_variation",
        title="Variation among samples",
        row=VariationRow,
        empty="a generation job in the pool (5 samples per instance)",
        header=(*CELL, "n", "samples", "shares_0.00", "shares_0.40", "shares_0.49"),
        build=lambda r: automatic.instance_variation(frame=r.instances),
        columns={"samples": "samples"},
    ),
    Table(
        key="beta_disagreement",
        title="Model-level disagreement (beta fit)",
        row=BetaRow,
        empty=JOB_PROB,
        header=(*CELL, "n", "mean", "var", "alpha", "beta"),
        build=lambda r: automatic.beta_disagreement(frame=r.instances) + tango.tango_beta_disagreement(frame=r.tango),
        columns={"var": "var", "alpha": "α", "beta": "β"},
    ),
    Table(
        key="tango_failure_rate",
        title="TANGO template failure rate",
        row=MeanSemRow,
        empty=TANGO_JOB,
        header=(*CELL, "mean", "sem", "n"),
        build=lambda r: tango.tango_failure_rate(frame=r.tango),
        latex=LatexTable("tango", latex.latex_tango),  # with the sigmas of tango_variation
    ),
    Table(
        key="tango_variation",
        title="TANGO variation (σ_gen and σ_prob)",
        row=TangoVariationRow,
        empty=TANGO_JOB,
        header=(*CELL, "n_gen", "sigma_gen_mean", "sigma_gen_std", "n_prob", "sigma_prob_mean", "sigma_prob_std"),
        build=lambda r: tango.tango_variation(frame=r.tango),
        columns={
            "n_gen": "n gen",
            "sigma_gen_mean": "sigma gen mean",
            "sigma_gen_std": "sigma gen std",
            "n_prob": "n prob",
            "sigma_prob_mean": "sigma prob mean",
            "sigma_prob_std": "sigma prob std",
        },
    ),
    Table(
        key="repetition",
        title="Repetition rate",
        row=RepetitionRow,
        empty="a generation job in the pool",
        header=(*CELL, "mean", "std", "n"),
        build=lambda r: automatic.repetition(job_ids=r.job_ids),
        latex=LatexTable("repetition", latex.latex_repetition),
    ),
    Table(
        key="accuracy",
        title="Accuracy",
        row=AccuracyRow,
        empty="a generation job or annotated items in the pool",
        header=(*CELL, "n", "prob", "prob_sem", "gen", "gen_sem", "gen_first", "gen_first_sem", "human", "human_sem"),
        build=lambda r: r.accuracy,
        columns={
            f"{method}{suffix}": f"{method}{suffix}".replace("_", " ")
            for method in ("prob", "gen", "gen_first", "human")
            for suffix in ("", "_sem", "_boot_ci", "_n")
        }
        | {"prob_score": "prob score"},
        latex=LatexTable("accuracy", latex.latex_accuracy),
        # Four measures of up to five columns each would not fit the report's column: a table per kind of measure.
        parts=(
            TablePart("accuracy", "Accuracy: probability-based"),
            TablePart(
                "accuracy_generation",
                "Accuracy: generation-based (all samples, first sample)",
                tuple(
                    f"{method}{suffix}" for method in ("gen", "gen_first") for suffix in ("", "_sem", "_boot_ci", "_n")
                ),
            ),
            TablePart("accuracy_human", "Accuracy: human labels", ("human", "human_sem", "human_boot_ci", "human_n")),
        ),
        part_keys=tuple(CELL),
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
)

# RUFF with distractors: accuracy against the distractor count (the heuristic marked not valid there).
DISTRACTORS = (
    Table(
        key="distractors",
        title="Distractors",
        row=DistractorRow,
        empty="data this pool does not have yet",
        header=tuple(CELL),
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
        optional=True,
    ),
)

# Do datasets and methods rank the models alike? Kendall's tau per pair of (dataset, method).
RANKINGS = (
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
)
