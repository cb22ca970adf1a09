"""The shape of a pool's report, as types: `Report` is what `analysis.selectors.report.report_data` returns and what
`GET /api/reports/{pool}/?format=json` sends. analysis/openapi.py builds the API's schema from these types, and
tests/analysis/test_report_types.py checks a built report against them.

Every figure that can be undefined is `float | None` (null in JSON, never NaN); intervals are `[low, high]` or null.
The sections of RUFF with distractors and of the judges are marked `NotRequired` below; their rows are typed where
their code is.
"""

from typing import NotRequired, TypedDict

Interval = list[float]  # [low, high]


class Cell(TypedDict):
    """The cell of a row (analysis/cells.py)."""

    model: str
    dataset: str
    setting: str
    pronoun: str


# --- inter-annotator (docs/domain.md, 'Metrics' and 'Multi-rater statistics') ----------------------------------------


class PairwiseRow(TypedDict):
    annotator_1: str
    annotator_2: str
    n_items: int
    raw_agreement: float | None
    raw_agreement_sem: float | None
    raw_agreement_boot_ci: Interval | None
    cohen_kappa: float | None  # on the square table over the label set
    kappa_ci: Interval | None
    gwet_ac1: float | None
    gwet_ac1_ci: Interval | None


class AgreementBlock(TypedDict):
    """One view (3-way label, binary label, extraneous flag): the first two annotations' figures, then the figures
    over every annotation of the overlap items."""

    n_items: int
    raw_agreement: float | None
    raw_agreement_sem: float | None
    raw_agreement_boot_ci: Interval | None
    cohen_kappa: float | None  # on the square table over the label set, CI clipped to [-1, 1]
    kappa_ci: Interval | None
    krippendorff_alpha: float | None
    n_raters: int
    fleiss_kappa: float | None  # each item with its own number of raters
    fleiss_n_items: int
    gwet_ac1: float | None
    gwet_ac1_ci: Interval | None
    krippendorff_alpha_all: float | None
    pairwise: list[PairwiseRow]


class Confusion(TypedDict):
    labels: list[str]
    matrix: list[list[int]]  # rows: first annotator, columns: second


class AnnotatorPair(TypedDict):
    annotator_1: str
    annotator_2: str
    n_items: int
    agreement: float | None


class InterAnnotator(TypedDict):
    pronoun_label: AgreementBlock
    pronoun_binary: AgreementBlock
    extraneous: AgreementBlock
    confusion: Confusion
    annotator_pairs: list[AnnotatorPair]


# --- human side ----------------------------------------------------------------------------------------------------


class HumanVsHeuristicRow(Cell):
    agreement: float | None
    sem: float | None
    agreement_boot_ci: Interval | None
    n: int
    agreement_unanimous: float | None  # items whose two or more labels are all equal
    agreement_unanimous_n: int
    agreement_split: float | None  # items whose labels differ
    agreement_split_n: int


class RateRow(Cell):
    rate: float | None
    sem: float | None
    rate_boot_ci: Interval | None
    n: int


class Disagreement(Cell):
    public_id: str
    sample_index: int | None
    human_label: str
    heuristic_correct: bool
    first_pronoun: str | None
    context: str
    continuation: str


class Example(TypedDict):
    """One drawn qualitative example (docs/domain.md, 'Aggregates'); the item's fields are null where a model has
    none."""

    kind: str
    dataset: str
    setting: str
    model: str
    pronoun: str | None
    candidates: int
    choices: int
    public_id: str | None
    context: str | None
    continuation: str | None
    first_pronoun: str | None
    human_label: str | None
    heuristic_correct: bool | None


class AggregateRow(Cell):
    """One item's aggregated label (annotation/selectors/aggregate.py)."""

    item: str
    n_ratings: int
    majority: str
    dawid_skene: str
    dawid_skene_posterior: float
    mace: str


class GuidelineVersionRow(TypedDict):
    """Human vs heuristic over the annotations saved under one guideline version (null: before any)."""

    guideline_version: int | None
    n: int
    agreement: float | None
    sem: float | None


class AnnotatorQualityRow(TypedDict):
    annotator: str
    items: int
    gold_n: int
    gold_correct: int
    gold_accuracy: float | None
    median_seconds: float | None
    fast_share: float | None
    agreement: float | None
    agreement_n: int


# --- automatic side ------------------------------------------------------------------------------------------------


class ProbVsGenRow(Cell):
    n: int
    mcc: float | None
    mcc_ci: Interval | None
    kappa: float | None  # as the paper computes it (a one-sided table when one side is constant)
    kappa_ci: Interval | None
    kappa_square: float | None  # on the square 2x2 table
    kappa_square_ci: Interval | None
    agreement: float | None
    agreement_sem: float | None
    agreement_boot_ci: Interval | None


class VariationRow(Cell):
    n: int
    samples: int
    shares: dict[str, float]  # population std of an instance's samples ("0.00", "0.40", "0.49") -> share


class BetaRow(Cell):
    n: int
    mean: float | None
    var: float | None
    alpha: float | None
    beta: float | None


class MeanSemRow(Cell):
    mean: float | None
    sem: float | None
    n: int


class RepetitionRow(Cell):
    mean: float | None
    std: float | None
    n: int


class TangoVariationRow(Cell):
    n_gen: int
    sigma_gen_shares: dict[str, float]
    sigma_gen_mean: float | None
    sigma_gen_std: float | None
    n_prob: int
    sigma_prob_shares: dict[str, float]
    sigma_prob_mean: float | None
    sigma_prob_std: float | None


class AccuracyRow(Cell):
    """Accuracy per cell, each with its SEM, bootstrap interval and count (docs/domain.md, 'Aggregates')."""

    n: int
    prob: float | None
    prob_sem: float | None
    prob_boot_ci: Interval | None
    prob_n: int
    gen: float | None
    gen_sem: float | None
    gen_boot_ci: Interval | None  # instances resampled, each with all of its samples
    gen_n: int
    gen_first: float | None
    gen_first_sem: float | None
    gen_first_boot_ci: Interval | None
    gen_first_n: int
    human: float | None
    human_sem: float | None
    human_boot_ci: Interval | None
    human_n: int
    prob_score: str | None  # the jobs' probability scoring: mean or sum (None without a job)


class RankingAgreementRow(TypedDict):
    """Kendall's tau between two (dataset, method) rankings of the models (docs/domain.md, 'Rankings across
    benchmarks'); `tau` and `p_value` are null with fewer than 3 shared models (`note` says why)."""

    dataset_a: str
    method_a: str  # probability accuracy (mean|sum), heuristic accuracy or human accuracy
    dataset_b: str
    method_b: str
    n_models: int
    tau: float | None
    p_value: float | None
    p_method: str | None  # exact, or asymptotic when accuracies tie
    note: str


class ConflictRow(TypedDict):
    scope: str
    value: str
    conflicts: int
    instances: int
    rate: float


# --- the judge's verdict (docs/domain.md, 'The judge's verdict'; analysis/selectors/verdict.py) ---------------------


class AltTestAnnotatorRow(TypedDict):
    annotator: str
    n: int
    p_value: float | None  # null: a NaN p-value (never a rejection)
    rejected: bool
    rho: float


class AltTestResult(TypedDict):
    omega: float | None  # null: not run (fewer than 2 tested annotators)
    rho: float | None
    passed: bool | None
    tested: int
    skipped: list[str]  # annotators with fewer than 30 eligible items
    annotators: list[AltTestAnnotatorRow]
    omega_by_epsilon: dict[str, float | None]  # "0.00" to "0.30" in steps of 0.05
    note: str | None


class VerdictAgreementRow(TypedDict):
    against: str  # "human", an annotator's username, or "human_ceiling" (n: the annotator pairs averaged)
    n: int
    cohen_kappa: float | None
    scott_pi: float | None
    gwet_ac1: float | None
    per_class_kappa: dict[str, float | None]
    cohen_kappa_boot_ci: Interval | None
    scott_pi_boot_ci: Interval | None
    gwet_ac1_boot_ci: Interval | None


class SelectiveResult(TypedDict):
    alpha: float
    delta: float
    threshold: float | None  # null: no threshold passed, the judge escalates everything
    coverage: float
    coverage_job: float | None  # the share of the job's judged generations kept (runs over a job)
    agreement_above: float | None
    n: int
    curve: list[list[float]]  # [coverage, disagreement], from the highest threshold down


class JudgeVerdictRow(TypedDict):
    judge: str
    version: int
    run: int
    epsilon: float
    q: float
    alt_test: AltTestResult
    agreement: list[VerdictAgreementRow]
    selective: SelectiveResult


class PredictionPoweredRow(TypedDict):
    judge: str
    run: int
    model: str
    dataset: str
    pronoun: str  # a base pronoun, or "all"
    n: int  # labelled contexts
    N: int  # unlabelled contexts
    ppi_rate: float | None
    ppi_ci: Interval | None
    human_rate: float | None
    human_ci: Interval | None
    judge_rate: float | None  # biased: the judge alone over all contexts
    n_eff: float | None


# --- the report ----------------------------------------------------------------------------------------------------


class Report(TypedDict):
    pool: str
    labels: list[str]
    human_verdict: str  # "default", or the `--human` verdict: majority, dawid_skene, mace, first
    n_items: int
    n_annotated: int
    examples_seed: int
    inter_annotator: InterAnnotator
    human_vs_heuristic: list[HumanVsHeuristicRow]
    label_distribution: list[dict[str, str | int]]  # the cell, `n`, and a count per label of the pool
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
    aggregates: list[AggregateRow]
    # The sections of RUFF with distractors and of the judges; their rows are typed where their code is.
    distractors: NotRequired[list[dict[str, str | int | float | None]]]  # RUFF with distractors
    human_vs_judge: NotRequired[list[dict[str, str | int | float | None]]]  # machine raters (judging)
    judge_vs_heuristic: NotRequired[list[dict[str, str | int | float | None]]]
    judge_calibration: NotRequired[list[dict[str, str | int | float | None]]]
    judge_reliability: NotRequired[list[dict[str, str | int | float | None]]]
    judge_verdict: NotRequired[list[JudgeVerdictRow]]  # the judge's verdict
    prediction_powered: NotRequired[list[PredictionPoweredRow]]  # rates once the judge labels the job
    ranking_agreement: NotRequired[list[RankingAgreementRow]]  # rankings across benchmarks
    # Guidelines edited mid-study: empty while there is one version.
    by_guideline_version: NotRequired[list[GuidelineVersionRow]]


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
