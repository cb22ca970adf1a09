"""The rows of the report's human and automatic tables, as types: each table's declaration
(analysis/report/tables/) names its row type, its builder returns a list of them (mypy checks it), and
tests/analysis/test_report_tables.py checks a built report's rows have exactly their keys. The machine raters' rows are
in machine_types.py; the whole report's shape (`Report`) in shape.py.

Every figure that can be undefined is `float | None` (null in JSON, never NaN); intervals are `[low, high]` or null.
"""

from typing import TypedDict

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
    # An ordinal or interval pool's (docs/domain.md, "Scales"); null on a nominal one.
    weighted_kappa_linear: float | None
    weighted_kappa_quadratic: float | None
    mae: float | None
    rmse: float | None


class AgreementBlock(TypedDict):
    """One view (3-way label, binary label, extraneous flag): the headline figures (docs/domain.md, 'Headline
    figures'), then the figures over every annotation of the overlap items."""

    n_items: int
    n_pairs: int  # every pair of an item's annotations, over the overlap items
    raw_agreement: float | None  # over every pair, pooled
    raw_agreement_sem: float | None
    raw_agreement_boot_ci: Interval | None
    kappa_method: str  # "cohen": every item has two annotations (ordered by annotator); "light": the pairs' mean
    cohen_kappa: float | None  # on the square table over the label set, CI clipped to [-1, 1]; or Light's
    light_pairs: int | None  # the annotator pairs Light's kappa averages (sharing at least 30 items); null: Cohen's
    kappa_ci: Interval | None
    weighted_kappa_linear: float | None  # ordinal or interval pools; null on nominal ones
    weighted_kappa_quadratic: float | None
    mae: float | None
    rmse: float | None
    krippendorff_alpha: float | None  # over all raters at the pool's level of measurement
    n_raters: int
    fleiss_kappa: float | None  # each item with its own number of raters
    fleiss_n_items: int
    gwet_ac1: float | None
    gwet_ac1_ci: Interval | None
    krippendorff_alpha_all: float | None
    pairwise: list[PairwiseRow]
    pairwise_note: str | None  # why `pairwise` is empty though pairs share items (too many raters); else null


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


class LabelDistributionRow(Cell):
    """The count of each label of the pool (a column per label beside these: its declaration says `per_label`)."""

    n: int


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


# --- RUFF with distractors (analysis/selectors/distractors.py) -------------------------------------------------------


class DistractorRow(TypedDict):
    """Accuracies (each with its SEM) per model x setting x distractor count; the heuristic is not valid there."""

    model: str
    setting: str
    distractors: int
    n: int
    human_accuracy: float | None
    human_accuracy_sem: float | None
    probability_accuracy: float | None
    probability_accuracy_sem: float | None
    heuristic_accuracy: float | None
    heuristic_accuracy_sem: float | None
    human_vs_heuristic: float | None
    human_vs_heuristic_sem: float | None
    heuristic_validity: str
    first_pronoun_other_share: float | None
    first_pronoun_n: int


# --- GIFI (docs/domain.md, 'GIFI') ----------------------------------------------------------------------------------


class GifiScoreRow(TypedDict):
    """One model's GIFI dimensions (stored scores only) and its rank among the pool's models; null where not scored."""

    rank: int | None
    model: str
    GDR: float | None
    SN: float | None
    NTS: float | None
    CF: float | None
    SA: float | None
    OF: float | None
    PE: float | None
    GIFI: float | None
    scored: str  # the dimensions GIFI is over, space separated


class GifiFamilyRow(TypedDict):
    """One model's accuracy on one pronoun family in GDR or PE."""

    model: str
    dimension: str
    pronoun: str
    accuracy: float


class GifiPpiRow(TypedDict):
    """A GIFI dimension corrected by people (docs/domain.md, 'GIFI'). GDR: per declared family (and `all`: GDR
    itself), the detector's accuracy, people's on the pool and the prediction-powered estimate over the model's GDR
    generations. SA, OF, SN, NTS: one `all` row, the scorer's score and the score from the PPI++ per-template terms."""

    model: str
    dimension: str  # GDR, SA, OF, SN or NTS
    pronoun: str  # a family, or "all" for the dimension itself
    n: int  # labelled pool items
    N: int  # the model's other generations the dimension counts (GDR: of the family)
    detector: float | None  # the scorer's figure (GDR's detector, SA/OF's detector, SN/NTS's scorer)
    human: float | None
    ppi: float | None
    ppi_ci: Interval | None  # GDR's families only: the score of a dimension is a point estimate
    templates: int | None  # SA, OF, SN, NTS: the templates people's labels corrected (of those counted)
