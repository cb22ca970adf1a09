"""The machine raters' tables (LLM judges) and the judge's verdict. Composed in the report's order in __init__.py."""

from __future__ import annotations

from analysis.report import parts
from analysis.report.exports import latex_judges as latex
from analysis.report.exports.tex import _fmt, _interval
from analysis.report.machine_types import (
    AltTestAnnotatorRow,
    CorrectedRateRow,
    JudgeAgreementRow,
    JudgeCalibrationRow,
    JudgeCheckRow,
    JudgeReliabilityRow,
    JudgeVerdictRow,
    PredictionPoweredRow,
    VerdictAgreementRow,
)
from analysis.report.table import CELL_COLUMNS, C, Column, LatexTable, Table, Tex, spaced
from analysis.selectors import checks as check_selectors
from analysis.selectors import corrected as corrected_selectors
from analysis.selectors import judges as judge_selectors
from analysis.selectors import verdict as verdict_selectors

JUDGE_RUN = "a finished LLM judge run over the pool (manage.py judge)"
JUDGED_HUMANS = "a finished LLM judge run over annotated items"
JUDGE_VERDICT = "a finished LLM judge run over the pool or its generation job, and annotated items"
N_LABELLED = "n (contexts people labelled)"
N_UNLABELLED = "N (contexts only the judge labelled)"
CI_CLIPPED = "interval clipped to [0, 1]"
CHECK_COLUMNS = (
    C("judge"),
    C("run"),
    Column("check", "check"),
    C("n"),
    Column("consistency", "position consistency"),
    Column("invariance", "family-swap invariance"),
    Column("accuracy_original", "accuracy on the unswapped items"),
    Column("ece_before", "ECE before calibration"),
    Column("ece_after", "ECE after calibration"),
    Column("brier_before", "Brier before calibration"),
    Column("brier_after", "Brier after calibration"),
    C("verdict_omega"),
    C("verdict_passed"),
    C("verdict_accuracy_before"),
    C("verdict_accuracy_after"),
)
CHECK_HEADER = tuple(column.key for column in CHECK_COLUMNS)


def judge_check_rows(report: dict) -> list[dict]:
    """A check's CSV row: its figures, `by_position_<p>`, `by_family_<family>_n` / `_accuracy`, `p_cf_<label>`
    and the calibrated verdict's `verdict_<key>`."""
    rows = []
    for row in report.get("judge_checks") or []:
        flat = {k: v for k, v in row.items() if not isinstance(v, dict) and v is not None or k in CHECK_HEADER}
        nested = ("by_position", "by_family", "p_cf", "verdict", "reliability_before", "reliability_after")
        flat = {k: v for k, v in flat.items() if k not in nested}
        for key in ("by_position", "p_cf", "verdict"):
            flat.update({f"{key}_{sub}": value for sub, value in (row.get(key) or {}).items()})
        for family, cell in (row.get("by_family") or {}).items():
            flat[f"by_family_{family}_n"], flat[f"by_family_{family}_accuracy"] = cell["n"], cell["accuracy"]
        rows.append(flat)
    return rows


def rates_corrected_rows(report: dict) -> list[dict]:
    rows = []
    for row in report.get("rates_corrected") or []:
        low, high = row.get("ci") or (None, None)
        rows.append({**{k: v for k, v in row.items() if k != "ci"}, "ci_low": low, "ci_high": high})
    return rows


OMEGAS = tuple(f"omega_{e}" for e in ("0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30"))


# Machine raters (LLM judges), never mixed into the human figures, and the judge's verdict: may it replace the
# annotators (docs/domain.md, 'The judge's verdict'), and the rates once it labels everything.
JUDGES = (
    Table(
        key="human_vs_judge",
        title="Human vs LLM judge (machine rater)",
        row=JudgeAgreementRow,
        empty=JUDGED_HUMANS,
        columns=(
            C("judge"),
            C("origin"),
            *CELL_COLUMNS,
            C("human_agreement"),
            C("agreement"),
            C("sem"),
            C("n"),
        ),
        build=lambda r: judge_selectors.human_vs_judge(frame=r.judges),
        optional=True,
    ),
    Table(
        key="judge_vs_heuristic",
        title="LLM judge vs heuristic",
        row=JudgeAgreementRow,
        empty=JUDGE_RUN,
        columns=(
            C("judge"),
            C("origin"),
            *CELL_COLUMNS,
            C("human_agreement"),
            C("agreement"),
            C("sem"),
            C("n"),
        ),
        build=lambda r: judge_selectors.judge_vs_heuristic(frame=r.judges),
        optional=True,
    ),
    Table(
        key="judge_calibration",
        title="LLM judge calibration against the human label",
        row=JudgeCalibrationRow,
        empty=JUDGED_HUMANS,
        columns=(
            C("judge"),
            C("origin"),
            C("model"),
            C("dataset"),
            C("n"),
            C("accuracy"),
            *spaced("ece", "brier", "brier_multiclass"),
        ),
        build=lambda r: judge_selectors.judge_calibration(frame=r.judges),
        optional=True,
    ),
    Table(
        key="judge_reliability",
        title="LLM judge reliability (per confidence bin)",
        row=JudgeReliabilityRow,
        empty=JUDGED_HUMANS,
        columns=(
            C("judge"),
            *spaced("low", "high"),
            C("n"),
            Column("confidence", "confidence"),
            C("accuracy"),
        ),
        build=lambda r: judge_selectors.judge_reliability(frame=r.judges),
        optional=True,
    ),
    Table(
        key="judge_verdict",
        title="The judge's verdict (Alternative Annotator Test, selective threshold)",
        row=JudgeVerdictRow,
        empty=JUDGE_VERDICT,
        columns=(
            C("judge"),
            Column("version", "version"),
            C("run"),
            *spaced("epsilon", "q", "n_ties", "omega"),
            C("rho"),
            *spaced("passed", "tested", "skipped"),
            C("note"),
            *(C(omega) for omega in OMEGAS),
            *spaced(
                "selective_alpha",
                "selective_delta",
                "selective_threshold",
                "selective_coverage",
                "selective_coverage_job",
                "selective_agreement_above",
                "selective_n",
            ),
        ),
        build=lambda r: verdict_selectors.judge_verdict(
            pool=r.pool, frame=r.frame, labels=r.labels, parameters=r.verdict, runs=r.judge_runs
        ),
        flat=parts.judge_verdict_rows,
        latex=LatexTable("judge_verdict", latex.latex_judge_verdict),
        optional=True,
    ),
    Table(
        key="judge_verdict_agreement",
        title="The judge's chance-corrected agreement (with the human label, each annotator, the human ceiling)",
        row=VerdictAgreementRow,
        empty=JUDGE_VERDICT,
        columns=(
            C("judge"),
            C("run"),
            Column("against", "against"),
            C("n"),
            C("cohen_kappa"),
            *spaced("scott_pi"),
            C("gwet_ac1"),
            C("per_class_kappa_correct"),
            C("per_class_kappa_misgendering"),
            C("per_class_kappa_no_pronoun"),
            *spaced("cohen_kappa_boot_ci", "scott_pi_boot_ci", "gwet_ac1_boot_ci", kind="interval"),
            C("per_class_kappa_boot_ci_correct", kind="interval"),
            C("per_class_kappa_boot_ci_misgendering", kind="interval"),
            C("per_class_kappa_boot_ci_no_pronoun", kind="interval"),
        ),
        typed=parts.judge_verdict_agreement,
        flat=parts.judge_verdict_agreement_rows,
    ),
    Table(
        key="judge_verdict_annotators",
        title="Alternative Annotator Test per annotator",
        row=AltTestAnnotatorRow,
        empty=JUDGE_VERDICT,
        columns=(
            C("judge"),
            C("run"),
            C("annotator"),
            C("n"),
            C("p_value"),
            Column("rejected", "rejected"),
            C("rho"),
        ),
        typed=parts.judge_verdict_annotators,
        flat=parts.judge_verdict_annotators_rows,
    ),
    Table(
        key="judge_checks",
        title="The judge's checks (position consistency, family-swap invariance, contextual calibration)",
        row=JudgeCheckRow,
        empty="a finished check run over the pool (manage.py judge --check position|family-swap|contextual)",
        columns=CHECK_COLUMNS,
        build=lambda r: check_selectors.judge_checks(pool=r.pool, frame=r.frame),
        flat=judge_check_rows,
        optional=True,
    ),
    Table(
        key="prediction_powered",
        rates=True,
        title="Prediction-powered misgendering rates (per context)",
        row=PredictionPoweredRow,
        empty="a finished LLM judge run over the pool's generation job (manage.py judge --job) and annotated items",
        columns=(
            C("judge", latex=Tex("Judge", lambda r: f"{r['judge']} (run {r['run']})")),
            C("run"),
            C("model"),
            C("dataset"),
            C("pronoun"),
            Column("n", N_LABELLED, latex=Tex("n", lambda r: str(r["n"]))),
            Column("N", N_UNLABELLED, latex=Tex("N", lambda r: str(r["N"]))),
            *spaced("ppi_rate", latex=Tex("PPI [95% CI]", latex.ppi_marked)),
            *spaced("ppi_ci", kind="interval"),
            Column("ci_clipped", CI_CLIPPED),
            *spaced(
                "human_rate", latex=Tex("People only [95% CI]", lambda r: _interval(r["human_rate"], r["human_ci"]))
            ),
            *spaced("human_ci", kind="interval"),
            *spaced("judge_rate", latex=Tex("Judge only")),
            *spaced("n_eff", latex=Tex("n_eff", lambda r: _fmt(r["n_eff"], 1))),
        ),
        build=lambda r: verdict_selectors.prediction_powered(pool=r.pool, frame=r.frame, runs=r.judge_runs),
        latex=LatexTable("prediction_powered", caption=latex.PREDICTION_POWERED_CAPTION, fit=True),
        optional=True,
    ),
    Table(
        key="rates_corrected",
        title="Bias-corrected misgendering rates (Rogan-Gladen, per context), beside the prediction-powered ones",
        row=CorrectedRateRow,
        empty="a finished LLM judge run over the pool's generation job (manage.py judge --job) and annotated items",
        columns=(
            C("judge"),
            C("run"),
            C("model"),
            C("dataset"),
            C("pronoun"),
            Column("se", "sensitivity"),
            Column("sp", "specificity"),
            Column("q", "judge's positive share"),
            Column("rate", "corrected rate"),
            Column("ci", "bootstrap 95% CI", kind="interval"),
            Column("ci_clipped", CI_CLIPPED),
            Column("n_labelled", "n (contexts people labelled)"),
            Column("N", "N (every context of the stratum)"),
        ),
        build=lambda r: corrected_selectors.rates_corrected(pool=r.pool, frame=r.frame, runs=r.judge_runs),
        flat=rates_corrected_rows,
        optional=True,
    ),
)
