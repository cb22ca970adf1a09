"""The shape of a pool's report, as a type: `Report` is what `analysis.report.build.report_data` returns and what
`GET /api/reports/{pool}/?format=json` sends, one key per declared table that has a builder
(analysis/report/tables.py) after the header; tests/analysis/test_report_tables.py checks it against the declarations.
analysis/openapi.py builds the API's schema from the declarations. The quality dashboard's shape is here too.
"""

from typing import NotRequired, TypedDict

from analysis.report.machine_types import (
    JudgeAgreementRow,
    JudgeCalibrationRow,
    JudgeReliabilityRow,
    JudgeVerdictRow,
    PredictionPoweredRow,
)
from analysis.report.types import (
    AccuracyRow,
    AggregateRow,
    AnnotatorQualityRow,
    BetaRow,
    ConflictRow,
    Disagreement,
    DistractorRow,
    Example,
    GuidelineVersionRow,
    HumanVsHeuristicRow,
    InterAnnotator,
    Interval,
    LabelDistributionRow,
    MeanSemRow,
    ProbVsGenRow,
    RankingAgreementRow,
    RateRow,
    RepetitionRow,
    TangoVariationRow,
    VariationRow,
)


class ReportHeader(TypedDict):
    """What the report says before its tables."""

    pool: str
    labels: list[str]
    human_verdict: str  # "default", or the `--human` verdict: majority, dawid_skene, mace, first
    n_items: int
    n_annotated: int
    examples_seed: int


# --- the report ----------------------------------------------------------------------------------------------------


class Report(ReportHeader):
    """The header, then each table with a builder, in the order of the declarations; a table declared `optional`
    is NotRequired (a report saved before it was added lacks it)."""

    inter_annotator: InterAnnotator
    human_vs_heuristic: list[HumanVsHeuristicRow]
    label_distribution: list[LabelDistributionRow]  # and a count per label of the pool
    extraneous_rate: list[RateRow]
    prob_vs_gen: list[ProbVsGenRow]
    instance_variation: list[VariationRow]
    beta_disagreement: list[BetaRow]
    tango_failure_rate: list[MeanSemRow]
    tango_variation: list[TangoVariationRow]
    repetition: list[RepetitionRow]
    accuracy: list[AccuracyRow]
    conflict_rate: list[ConflictRow]
    disagreements: list[Disagreement]
    examples: list[Example]
    annotator_quality: list[AnnotatorQualityRow]
    human_vs_judge: NotRequired[list[JudgeAgreementRow]]  # machine raters (judging)
    judge_vs_heuristic: NotRequired[list[JudgeAgreementRow]]
    judge_calibration: NotRequired[list[JudgeCalibrationRow]]
    judge_reliability: NotRequired[list[JudgeReliabilityRow]]
    judge_verdict: NotRequired[list[JudgeVerdictRow]]  # the judge's verdict
    prediction_powered: NotRequired[list[PredictionPoweredRow]]  # rates once the judge labels the job
    aggregates: list[AggregateRow]
    distractors: NotRequired[list[DistractorRow]]  # RUFF with distractors
    ranking_agreement: NotRequired[list[RankingAgreementRow]]  # rankings across benchmarks
    by_guideline_version: NotRequired[list[GuidelineVersionRow]]  # guidelines edited mid-study


# --- the quality dashboard (analysis/selectors/quality.py) ----------------------------------------------------------

ConfusionTable = dict[str, dict[str, int]]  # reference label -> the rater's label -> count


class QualityDashboard(TypedDict):
    pool: str
    pass_mark: float
    fast_seconds: float
    fast_share_warning: float
    window: int
    seconds_bins: list[int]
    n_annotations: int
    annotator_quality: list[AnnotatorQualityRow]
    kappa_matrix: dict[str, list]
    agreement_over_time: list[dict[str, str | int | float | None]]
    seconds: list[dict[str, str | int | float | list[int] | None]]
    warnings: list[dict[str, str]]
    gwet_ac1: float | None
    gwet_ac1_ci: Interval | None
    fleiss_kappa: float | None
    fleiss_n_items: int
    aggregate: str  # the aggregate the `confusion_aggregate` tables are against: dawid_skene
    confusion_gold: dict[str, ConfusionTable]  # per rater
    confusion_aggregate: dict[str, ConfusionTable]
    confusion_heuristic: dict[str, ConfusionTable]
