from django.db import models

from generation.models import Generation, GenerationJob
from generation.models.datasets import BASE_CHOICES
from generation.models.jobs import SETTING_CHOICES


class RepetitionRate(models.Model):
    """The repetition rate of one generation's continuation, computed once: tokenizing every generation of a
    paper-scale study takes far longer than the rest of a report, and a generation's text never changes.
    `rate` is null when the continuation is too short to have 4-grams. The cell (job, setting, pronoun) is copied
    from the generation so that the per-cell averages read one table."""

    generation = models.OneToOneField(Generation, primary_key=True, on_delete=models.CASCADE, related_name="repetition")
    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="+")
    setting = models.CharField(max_length=4, choices=SETTING_CHOICES)
    pronoun = models.CharField(max_length=8, choices=BASE_CHOICES)
    rate = models.FloatField(null=True)

    class Meta:
        indexes = [models.Index(fields=["job", "setting", "pronoun"])]

    def __str__(self) -> str:
        return f"repetition of generation {self.generation_id}: {self.rate}"
