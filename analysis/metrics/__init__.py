"""Pure statistics on numpy arrays: no database, no Django. Every undefined figure is `None`, never NaN or 0."""

from analysis.metrics.agreement import (
    binary_agreement,
    cohen_kappa,
    krippendorff_alpha,
    mcc,
    mean_sem,
    raw_agreement,
)
from analysis.metrics.beta import beta_moments, disagreement_probability
from analysis.metrics.repetition import repetition_rate
from analysis.metrics.variation import variation_shares

__all__ = [
    "beta_moments",
    "binary_agreement",
    "cohen_kappa",
    "disagreement_probability",
    "krippendorff_alpha",
    "mcc",
    "mean_sem",
    "raw_agreement",
    "repetition_rate",
    "variation_shares",
]
