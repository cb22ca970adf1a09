"""The rows of the machine raters' tables (LLM judges, docs/domain.md 'Machine raters') and of the judge's verdict
(docs/domain.md, 'The judge's verdict'; analysis/selectors/verdict.py). Declared as tables in
analysis/report/tables/; every figure that can be undefined is `float | None`."""

from typing import TypedDict

from analysis.report.types import Cell, Interval

# --- the machine raters (analysis/selectors/judges.py) ---------------------------------------------------------------


class JudgeAgreementRow(Cell):
    """Raw agreement of two binaries (human and judge, or judge and heuristic) per judge x cell x human agreement."""

    judge: str
    origin: str  # `judge:<name>`
    human_agreement: str  # all, unanimous or split
    agreement: float | None
    sem: float | None
    n: int


class JudgeCalibrationRow(TypedDict):
    """A judge's calibration against the human label: pooled (`model` and `dataset` null), then per model x dataset."""

    judge: str
    origin: str
    model: str | None
    dataset: str | None
    n: int
    accuracy: float | None
    ece: float | None
    brier: float | None
    brier_multiclass: float | None


class JudgeReliabilityRow(TypedDict):
    """One confidence bin of a judge's reliability table (empty bins: n = 0)."""

    judge: str
    low: float
    high: float
    n: int
    confidence: float | None
    accuracy: float | None


# --- the judge's verdict (docs/domain.md, 'The judge's verdict'; analysis/selectors/verdict.py) ---------------------


class AltTestAnnotatorRow(TypedDict):
    annotator: str
    n: int
    p_value: float | None  # null: a NaN p-value (never a rejection)
    rejected: bool
    rho: float


class AltTestPValueRow(TypedDict):
    annotator: str
    p_value: float | None
    rejected: bool


class AltTestResult(TypedDict):
    omega: float | None  # null: not run (fewer than 2 tested annotators)
    rho: float | None
    passed: bool | None
    tested: int
    skipped: list[str]  # annotators with fewer than 30 eligible items
    annotators: list[AltTestAnnotatorRow]
    omega_by_epsilon: dict[str, float | None]  # "0.00" to "0.30" in steps of 0.05
    annotators_by_epsilon: dict[str, list[AltTestPValueRow]]  # the same keys: each tested annotator's p-value
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
    per_class_kappa_boot_ci: dict[str, Interval | None]
    # An ordinal or interval pool's (docs/domain.md, "Scales"; against "human": its human value); null on nominal.
    weighted_kappa_linear: float | None
    weighted_kappa_quadratic: float | None
    mae: float | None
    rmse: float | None


class SelectiveResult(TypedDict):
    alpha: float
    delta: float
    threshold: float | None  # null: no threshold passed, the judge escalates everything
    coverage: float
    coverage_job: float | None  # the share of the job's judged generations kept (runs over a job)
    agreement_above: float | None
    n: int
    curve: list[list[float]]  # [coverage, disagreement], from the highest threshold down
    needs_confidences: bool  # the judge's labels came without confidences (an imported judge): nothing computed


class JudgeVerdictRow(TypedDict):
    judge: str
    version: int
    run: int
    epsilon: float
    q: float
    min_items: int  # the items an annotator needs to be tested by the Alt-Test
    n_ties: int  # the run's annotated study items left out: their labels tie and nobody adjudicated them
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
    ppi_ci: Interval | None  # clipped to [0, 1]
    ci_clipped: bool  # the PPI interval left [0, 1] and was clipped to it
    human_rate: float | None
    human_ci: Interval | None
    judge_rate: float | None  # biased: the judge alone over all contexts
    n_eff: float | None


class ReliabilityBin(TypedDict):
    low: float
    high: float
    n: int
    confidence: float | None
    accuracy: float | None


class FamilyAccuracyCell(TypedDict):
    n: int  # swapped items with a human label
    accuracy: float | None


class CheckVerdict(TypedDict):
    """The Alternative Annotator Test on a contextual check's calibrated labels, and the accuracy before and after."""

    epsilon: float
    omega: float | None
    rho: float | None
    passed: bool | None
    tested: int
    note: str | None
    n_labelled: int
    accuracy_before: float | None
    accuracy_after: float | None


class JudgeCheckRow(TypedDict):
    """A check of a judge (docs/domain.md, "Judges a reviewer trusts"): `check` is position, family_swap or
    contextual; the figures of the other checks are null."""

    judge: str
    run: int  # the check run
    check: str
    n: int  # items (position, contextual) or (item, target family) pairs (family_swap)
    consistency: float | None  # position: the share of items labelled alike under every rotation
    by_position: dict[str, float | None] | None  # position "1".."m": share chosen there minus 1/m
    invariance: float | None  # family_swap: the share of pairs labelled as the original
    by_family: dict[str, FamilyAccuracyCell] | None  # family_swap: per target family
    accuracy_original: float | None  # family_swap: on the items themselves, the reference for by_family
    p_cf: dict[str, float] | None  # contextual: the mean content-free probability of each option
    ece_before: float | None
    ece_after: float | None
    brier_before: float | None
    brier_after: float | None
    verdict: CheckVerdict | None  # contextual: on the calibrated labels
    reliability_before: list[ReliabilityBin] | None  # contextual: the diagram's bins before calibration
    reliability_after: list[ReliabilityBin] | None


class CorrectedRateRow(TypedDict):
    """The judge's bias-corrected (Rogan-Gladen) rate of a stratum, beside PPI++ (docs/domain.md, "Judges a reviewer
    trusts"): None when se + sp - 1 <= 0.05 or a label class is missing among the labelled samples."""

    judge: str
    run: int
    model: str
    dataset: str
    pronoun: str  # a base pronoun, or "all"
    se: float | None  # the judge's sensitivity for the positive label against people's
    sp: float | None  # its specificity
    q: float | None  # its positive share over every judged sample
    rate: float | None
    ci: Interval | None  # bootstrap 95% percentile interval, clipped to [0, 1]
    ci_clipped: bool
    n_labelled: int  # contexts people labelled
    N: int  # every context of the stratum


# --- spending people's labels where they count (analysis/selectors/active.py) ----------------------------------------


class ActiveRateRow(TypedDict):
    """An active pool's estimate of the positive rate over a stratum's N contexts (docs/domain.md, "Spending people's
    labels where they count"); None while drawn contexts wait for labels (`n_incomplete`)."""

    judge: str
    run: int
    model: str
    dataset: str
    pronoun: str  # a base pronoun, or "all"
    rate: float | None
    ci: Interval | None  # clipped to [0, 1]
    ci_clipped: bool  # the interval left [0, 1] and was clipped to it
    human_rate: float | None  # people only, weighted by 1 / pi (Horvitz-Thompson)
    human_ci: Interval | None
    n_labelled: int
    n_incomplete: int  # drawn contexts without a human label yet
    N: int  # every context of the stratum


class PpiStratum(TypedDict):
    pronoun: str
    n: int  # labelled contexts
    N: int  # every context of the stratum
    weight: float  # N_k / N
    rate: float | None  # PPI++ within the stratum
    ci: Interval | None  # clipped to [0, 1]
    ci_clipped: bool


class StratifiedPpiRow(TypedDict):
    """Stratified PPI over pronoun families per model x dataset, beside the unstratified PPI++ estimate."""

    judge: str
    run: int
    model: str
    dataset: str
    rate: float | None
    ci: Interval | None  # clipped to [0, 1]
    ci_clipped: bool
    ppi_rate: float | None
    ppi_ci: Interval | None  # clipped to [0, 1]
    ppi_ci_clipped: bool
    n: int  # labelled contexts
    N: int  # every context of the job
    strata: list[PpiStratum]


class LabelBudgetRow(TypedDict):
    """The budget planner: contexts people must label for a 95% interval of half-width `half_width`, from the pool
    as a pilot; "unreachable" where no number of labels gets there."""

    judge: str
    run: int
    model: str
    dataset: str
    pronoun: str  # "all"
    half_width: float
    n_people: int | None
    n_ppi: int | str | None
    n_active: int | str | None
    pilot_n: int  # the pilot's labelled contexts
    N: int  # every context of the job


class ActiveInclusionRow(TypedDict):
    """A drawn context of an active pool: the judge's Yhat and its inclusion probability."""

    model: str
    dataset: str
    pronoun: str
    yhat: float
    inclusion_probability: float
