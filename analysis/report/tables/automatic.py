"""The tables of the models' results: probability against generation, variation, TANGO, repetition, accuracy,
conflicts, distractors and the rankings across benchmarks. Composed in the report's order in __init__.py."""

from __future__ import annotations

from analysis.cells import CELL
from analysis.report.exports import latex_tables as latex
from analysis.report.exports.tex import PM, Latex, _interval, _mean_sem, latex_join
from analysis.report.table import CELL_COLUMNS, C, Column, LatexTable, Table, TablePart, Tex, spaced
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

TAU = Latex(r"$\tau$")
JOB_PROB = "a generation job in the pool with probability-based results (imported generations have none)"
TANGO_JOB = "a TANGO generation job in the pool"
# The accuracy table's measures, each with its SEM, and their LaTeX headings.
ACCURACY_MEASURES = (("prob", "Probability"), ("gen", "Generation"), ("gen_first", "First sample"), ("human", "Human"))


# The models: probability against generation, variation, TANGO, repetition, accuracy (docs/domain.md, 'Metrics').
MODELS = (
    Table(
        key="prob_vs_gen",
        title="Probability vs generation",
        row=ProbVsGenRow,
        empty=JOB_PROB,
        columns=(
            *CELL_COLUMNS,
            C("n", latex=Tex("Instances")),
            Column("mcc", "MCC", latex=Tex("MCC [95% CI]", lambda r: _interval(r["mcc"], r["mcc_ci"]))),
            Column("mcc_ci", "MCC 95% CI", kind="interval"),
            Column(
                "kappa",
                "κ, as the paper computes it",
                latex=Tex("Cohen's kappa, as the paper computes it [95% CI]", latex.kappa_marked),
            ),
            C("kappa_ci", kind="interval"),
            C("agreement", latex=Tex("Raw agreement")),
            Column(
                "kappa_square",
                "κ (square table)",
                header=False,
                latex=Tex(
                    "Cohen's kappa, square table [95% CI]",
                    lambda r: _interval(r.get("kappa_square"), r.get("kappa_square_ci")),
                ),
            ),
            Column("kappa_square_ci", "κ (square table) 95% CI", header=False),
            Column("agreement_sem", "SEM", header=False),
        ),
        build=lambda r: automatic.prob_vs_gen(frame=r.instances) + tango.tango_prob_vs_gen(frame=r.tango),
        latex=LatexTable(
            "prob_vs_gen",
            caption=latex.prob_vs_gen_caption,
            columns=(*CELL, "n", "mcc", "kappa", "kappa_square", "agreement"),
        ),
    ),
    Table(
        key="instance_variation",
        title="Variation among samples",
        row=VariationRow,
        empty="a generation job in the pool (5 samples per instance)",
        columns=(
            *CELL_COLUMNS,
            C("n"),
            Column("samples", "samples"),
            C("shares_0.00"),
            C("shares_0.40"),
            C("shares_0.49"),
        ),
        build=lambda r: automatic.instance_variation(frame=r.instances),
    ),
    Table(
        key="beta_disagreement",
        title="Model-level disagreement (beta fit)",
        row=BetaRow,
        empty=JOB_PROB,
        columns=(
            *CELL_COLUMNS,
            C("n"),
            C("mean"),
            Column("var", "var"),
            Column("alpha", "α"),
            Column("beta", "β"),
        ),
        build=lambda r: automatic.beta_disagreement(frame=r.instances) + tango.tango_beta_disagreement(frame=r.tango),
    ),
    Table(
        key="tango_failure_rate",
        title="TANGO template failure rate",
        row=MeanSemRow,
        empty=TANGO_JOB,
        columns=(
            *CELL_COLUMNS,
            C("mean"),
            C("sem"),
            C("n"),
        ),
        build=lambda r: tango.tango_failure_rate(frame=r.tango),
        latex=LatexTable("tango", latex.latex_tango),  # with the sigmas of tango_variation
    ),
    Table(
        key="tango_variation",
        title="TANGO variation (σ_gen and σ_prob)",
        row=TangoVariationRow,
        empty=TANGO_JOB,
        columns=(
            *CELL_COLUMNS,
            *spaced("n_gen", "sigma_gen_mean", "sigma_gen_std", "n_prob", "sigma_prob_mean", "sigma_prob_std"),
        ),
        build=lambda r: tango.tango_variation(frame=r.tango),
    ),
    Table(
        key="repetition",
        title="Repetition rate",
        row=RepetitionRow,
        empty="a generation job in the pool",
        columns=(
            *CELL_COLUMNS,
            C("mean", latex=Tex("Repetition rate", lambda r: _mean_sem(r["mean"], r["std"]))),
            C("std"),
            C("n", latex=Tex("Generations")),
        ),
        build=lambda r: automatic.repetition(job_ids=r.job_ids),
        latex=LatexTable(
            "repetition",
            caption=latex_join("Repetition rate (mean ", PM, " std)."),
            columns=(*CELL, "n", "mean"),
        ),
    ),
    Table(
        key="accuracy",
        title="Accuracy",
        row=AccuracyRow,
        empty="a generation job or annotated items in the pool",
        columns=(
            *CELL_COLUMNS,
            C("n", latex=Tex("Instances")),
            *(
                column
                for key, heading in ACCURACY_MEASURES
                for column in (
                    Column(key, key.replace("_", " "), latex=Tex(heading, latex.mean_sem_of(key))),
                    Column(f"{key}_sem", f"{key} sem".replace("_", " ")),
                )
            ),
            *spaced(
                "prob_boot_ci",
                "prob_n",
                "gen_boot_ci",
                "gen_n",
                "gen_first_boot_ci",
                "gen_first_n",
                "human_boot_ci",
                header=False,
            ),
            Column("human_n", "human n", header=False, latex=Tex("Items", lambda r: str(r["human_n"]))),
            *spaced("prob_score", header=False),
        ),
        build=lambda r: r.accuracy,
        latex=LatexTable("accuracy", caption=latex.accuracy_caption, fit=True),
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
        columns=(
            *(Column(key, key, kind="text", latex=Tex(key.title())) for key in ("scope", "value")),
            *(Column(key, key, kind="count", latex=Tex(key.title())) for key in ("conflicts", "instances")),
            C("rate", latex=Tex("Rate")),
        ),
        build=lambda r: automatic.conflict_rate(frame=r.instances, tango=r.tango),
        latex=LatexTable(
            "conflict_rate",
            caption="Conflict rate: the share of instances whose probability-based result differs from their first "
            "sample's generation-based result, weighted by instances (sum of conflicts / sum of instances).",
        ),
    ),
)

# RUFF with distractors: accuracy against the distractor count (the heuristic marked not valid there).
DISTRACTORS = (
    Table(
        key="distractors",
        title="Distractors",
        row=DistractorRow,
        empty="data this pool does not have yet",
        columns=(
            *CELL_COLUMNS,
            *spaced(
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
                header=False,
            ),
        ),
        build=lambda r: distractor_selectors.distractors(frame=r.frame),
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
        columns=(
            *(
                Column(f"{key}_{side}", f"{key} {side}", kind="text", latex=Tex(key.title()))
                for side in ("a", "b")
                for key in ("dataset", "method")
            ),
            Column("n_models", "n models", kind="count", latex=Tex("Models")),
            Column("tau", "tau", latex=Tex(TAU)),
            C("p_value", latex=Tex("p")),
            Column("p_method", "p method", kind="text"),
            C("note", latex=Tex("Note")),
        ),
        build=lambda r: rankings.ranking_agreement(accuracy=r.accuracy),
        latex=LatexTable(
            "ranking_agreement",
            caption=latex_join(
                "Rankings across benchmarks: Kendall's ",
                TAU,
                " between the models' accuracies for each pair of (dataset, method), over the models both have, with "
                "its exact p-value (asymptotic where accuracies tie). Fewer than 3 shared models give no ",
                TAU,
                ". With 6 models, only ",
                Latex(r"$\tau \geq 0.87$"),
                " is significant at 0.05.",
            ),
            fit=True,
        ),
        optional=True,
    ),
)
