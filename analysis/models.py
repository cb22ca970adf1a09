from django.conf import settings
from django.db import models

from generation.models import Generation, Job
from generation.models.datasets import BASE_CHOICES
from generation.models.jobs import SETTING_CHOICES


class RepetitionRate(models.Model):
    """The repetition rate of one generation's continuation, computed once: tokenizing every generation of a
    paper-scale study takes far longer than the rest of a report, and a generation's text never changes.
    `rate` is null when the continuation is too short to have 4-grams. The cell (job, setting, pronoun) is copied
    from the generation so that the per-cell averages read one table."""

    generation = models.OneToOneField(Generation, primary_key=True, on_delete=models.CASCADE, related_name="repetition")
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="+")
    setting = models.CharField(max_length=4, choices=SETTING_CHOICES)
    pronoun = models.CharField(max_length=8, choices=BASE_CHOICES)
    rate = models.FloatField(null=True)

    class Meta:
        indexes = [models.Index(fields=["job", "setting", "pronoun"])]

    def __str__(self) -> str:
        return f"repetition of generation {self.generation_id}: {self.rate}"


class StudyPseudonym(models.Model):
    """The stable pseudonym of a person in a pool's study bundles (docs/domain.md, 'A study others can check'):
    `annotator-01`, ... The key (who is who) stays here, never in a bundle."""

    pool = models.ForeignKey("annotation.Pool", on_delete=models.CASCADE, related_name="pseudonyms")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    pseudonym = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool", "user"], name="study_pseudonym_one_per_user"),
            models.UniqueConstraint(fields=["pool", "pseudonym"], name="study_pseudonym_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.pseudonym} in pool {self.pool_id}"


class WeightsDigest(models.Model):
    """A weights file's SHA-256, computed once: hashing a model's gigabytes for every bundle would take minutes. The
    file is known by its resolved path, size and modification time; a changed file gets a new row."""

    path = models.CharField(max_length=1000)
    size = models.BigIntegerField()
    mtime_ns = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["path", "size", "mtime_ns"], name="weights_digest_unique")]

    def __str__(self) -> str:
        return f"{self.path}: {self.sha256}"


class GifiScore(models.Model):
    """One automatic scorer's output for one GIFI generation (docs/domain.md, 'GIFI'): stored before any report
    uses it, so a report does not pay for a classifier or an API call twice. `source` is the scorer as the
    researcher named it (a model id, a path, `perspective`)."""

    SENTIMENT, TOXICITY, EMBEDDING = "sentiment", "toxicity", "embedding"

    generation = models.ForeignKey(Generation, on_delete=models.CASCADE, related_name="gifi_scores")
    scorer = models.CharField(
        max_length=16, choices=[(SENTIMENT, SENTIMENT), (TOXICITY, TOXICITY), (EMBEDDING, EMBEDDING)]
    )
    source = models.CharField(max_length=300)
    value = models.FloatField(null=True, blank=True, help_text="sentiment in [-1, 1]; toxicity in [0, 1]")
    label = models.CharField(max_length=16, blank=True, help_text="positive/neutral/negative; toxic/not")
    vector = models.JSONField(null=True, blank=True, help_text="the embedding (CF)")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["generation", "scorer", "source"], name="gifi_score_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.scorer} {self.source} of generation {self.generation_id}"
