from django.db import models

from generation.models import Generation


class RepetitionRate(models.Model):
    """The repetition rate of one generation's continuation, computed once: tokenizing every generation of a
    paper-scale study takes far longer than the rest of a report, and a generation's text never changes.
    `rate` is null when the continuation is too short to have 4-grams."""

    generation = models.OneToOneField(Generation, primary_key=True, on_delete=models.CASCADE, related_name="repetition")
    rate = models.FloatField(null=True)

    def __str__(self) -> str:
        return f"repetition of generation {self.generation_id}: {self.rate}"
