from django.db import models
from django.db.models import Q

from generation.models.datasets import Dataset
from generation.models.jobs import Job

# How a pair's sentences were scored (docs/domain.md, 'Stereotype pair benchmarks'): a causal LM's summed token
# log-probability, a masked LM's pseudo-log-likelihood (CrowS-Pairs' own, or PLL-word-l2r), or scores made elsewhere.
CAUSAL, PLL, PLL_WORD_L2R, IMPORTED_SCORES = "causal", "pll", "pll-word-l2r", "imported"
PAIR_METHODS = (CAUSAL, PLL, PLL_WORD_L2R)
PAIR_METHOD_CHOICES = [
    (CAUSAL, "causal LM: summed token log-probability"),
    (PLL, "masked LM: pseudo-log-likelihood of the shared tokens"),
    (PLL_WORD_L2R, "masked LM: PLL-word-l2r"),
    (IMPORTED_SCORES, "scores computed elsewhere, imported"),
]


class Pair(models.Model):
    """One item of a stereotype pair benchmark (CrowS-Pairs, StereoSet's intrasentence set): the stereotypical and
    the anti-stereotypical sentence, turned so that `stereotypical` is always the stereotype (docs/domain.md,
    'Stereotype pair benchmarks'). `source_id` is the benchmark's own id (CrowS-Pairs' row index, StereoSet's item
    id); `unrelated` is StereoSet's third option, kept but never scored."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="pairs")
    source_id = models.CharField(max_length=200, help_text="the benchmark's own id of the pair")
    line = models.PositiveIntegerField(help_text="line of the source file it was read from")
    ordinal = models.PositiveIntegerField(help_text="the pair's place in its file")
    stereotypical = models.TextField()
    anti_stereotypical = models.TextField()
    unrelated = models.TextField(blank=True, help_text="StereoSet's unrelated option (not scored)")
    bias_type = models.CharField(max_length=64)
    extra = models.JSONField(default=dict, blank=True, help_text="the row's other fields")

    class Meta:
        ordering = ["dataset", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "source_id"], name="pair_unique_source_id"),
            models.UniqueConstraint(fields=["dataset", "ordinal"], name="pair_unique_ordinal"),
            models.CheckConstraint(
                condition=~Q(stereotypical="") & ~Q(anti_stereotypical=""), name="pair_has_both_sentences"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dataset}#{self.source_id}"


class PairScore(models.Model):
    """A model's score of both sentences of a pair (log-probabilities: higher is likelier). `model` is the model's
    name: a registered model's for a `pair_score` job (`job`), any name for imported scores."""

    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="scores")
    model = models.CharField(max_length=200)
    method = models.CharField(max_length=16, choices=PAIR_METHOD_CHOICES)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.CASCADE, related_name="pair_scores")
    score_stereotypical = models.FloatField()
    score_anti_stereotypical = models.FloatField()
    source_file = models.CharField(max_length=300, blank=True, help_text="imported scores: the file")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pair", "model", "method"]
        constraints = [
            models.UniqueConstraint(fields=["pair", "model", "method"], name="pair_score_unique"),
        ]
        indexes = [models.Index(fields=["model", "method"], name="pair_score_model_method")]

    def __str__(self) -> str:
        return f"{self.pair} by {self.model} ({self.method})"
