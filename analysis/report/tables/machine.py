"""The machine raters' tables (LLM judges) and the judge's verdict. Composed in the report's order in __init__.py."""

from __future__ import annotations

from analysis.cells import CELL
from analysis.report import parts
from analysis.report.exports import latex_judges as latex
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
from analysis.report.table import LatexTable, Table
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
CHECK_HEADER = (
    "judge", "run", "check", "n", "consistency", "invariance", "accuracy_original", "ece_before", "ece_after", "brier_before",
    "brier_after", "verdict_omega", "verdict_passed", "verdict_accuracy_before", "verdict_accuracy_after",
)  # fmt: skip


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
        header=("judge", "origin", *CELL, "human_agreement", "agreement", "sem", "n"),
        build=lambda r: judge_selectors.human_vs_judge(frame=r.judges),
        optional=True,
    ),
    Table(
        key="judge_vs_heuristic",
        title="LLM judge vs heuristic",
        row=JudgeAgreementRow,
        empty=JUDGE_RUN,
        header=("judge", "origin", *CELL, "human_agreement", "agreement", "sem", "n"),
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
        optional=True,
    ),
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
            "n_ties",
            "omega",
            "rho",
            "passed",
            "tested",
            "skipped",
            "note",
            *OMEGAS,
            "selective_alpha",
            "selective_delta",
            "selective_threshold",
            "selective_coverage",
            "selective_coverage_job",
            "selective_agreement_above",
            "selective_n",
        ),  # fmt: skip
        build=lambda r: verdict_selectors.judge_verdict(
            pool=r.pool, frame=r.frame, labels=r.labels, parameters=r.verdict, runs=r.judge_runs
        ),
        flat=parts.judge_verdict_rows,
        columns={
            name: name.replace("_", " ")
            for name in ("version", "epsilon", "q", "n_ties", "omega", "passed", "tested", "skipped")
            + tuple(f"selective_{key}" for key in ("alpha", "delta", "threshold", "coverage", "coverage_job"))
            + ("selective_agreement_above", "selective_n")
        },
        latex=LatexTable("judge_verdict", latex.latex_judge_verdict),
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
            "per_class_kappa_boot_ci_correct_low",
            "per_class_kappa_boot_ci_correct_high",
            "per_class_kappa_boot_ci_misgendering_low",
            "per_class_kappa_boot_ci_misgendering_high",
            "per_class_kappa_boot_ci_no_pronoun_low",
            "per_class_kappa_boot_ci_no_pronoun_high",
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
        key="judge_checks",
        title="The judge's checks (position consistency, family-swap invariance, contextual calibration)",
        row=JudgeCheckRow,
        empty="a finished check run over the pool (manage.py judge --check position|family-swap|contextual)",
        header=CHECK_HEADER,
        build=lambda r: check_selectors.judge_checks(pool=r.pool, frame=r.frame),
        flat=judge_check_rows,
        columns={
            "check": "check",
            "consistency": "position consistency",
            "invariance": "family-swap invariance",
            "accuracy_original": "accuracy on the unswapped items",
            "ece_before": "ECE before calibration",
            "ece_after": "ECE after calibration",
            "brier_before": "Brier before calibration",
            "brier_after": "Brier after calibration",
        },
        optional=True,
    ),
    Table(
        key="prediction_powered",
        rates=True,
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
            "ci_clipped",
            "human_rate",
            "human_ci_low",
            "human_ci_high",
            "judge_rate",
            "n_eff",
        ),  # fmt: skip
        build=lambda r: verdict_selectors.prediction_powered(pool=r.pool, frame=r.frame, runs=r.judge_runs),
        columns={
            **{
                name: name.replace("_", " ")
                for name in ("ppi_rate", "ppi_ci", "human_rate", "human_ci", "judge_rate", "n_eff")
            },
            "n": N_LABELLED,
            "N": N_UNLABELLED,
            "ci_clipped": CI_CLIPPED,
        },
        latex=LatexTable("prediction_powered", latex.latex_prediction_powered),
        optional=True,
    ),
    Table(
        key="rates_corrected",
        title="Bias-corrected misgendering rates (Rogan-Gladen, per context), beside the prediction-powered ones",
        row=CorrectedRateRow,
        empty="a finished LLM judge run over the pool's generation job (manage.py judge --job) and annotated items",
        header=(
            "judge",
            "run",
            "model",
            "dataset",
            "pronoun",
            "se",
            "sp",
            "q",
            "rate",
            "ci_low",
            "ci_high",
            "ci_clipped",
            "n_labelled",
            "N",
        ),  # fmt: skip
        build=lambda r: corrected_selectors.rates_corrected(pool=r.pool, frame=r.frame, runs=r.judge_runs),
        flat=rates_corrected_rows,
        columns={
            "se": "sensitivity",
            "sp": "specificity",
            "q": "judge's positive share",
            "rate": "corrected rate",
            "ci": "bootstrap 95% CI",
            "ci_clipped": CI_CLIPPED,
            "n_labelled": "n (contexts people labelled)",
            "N": "N (every context of the stratum)",
        },
        optional=True,
    ),
)
