from django.db import models
from django.db.models import Q

from generation.models.datasets import BASE_CHOICES
from generation.models.jobs import Generation, Job


class TangoTemplate(models.Model):
    """Prob-TANGO for one TANGO generation (docs/domain.md, 'TANGO and Prob-TANGO'): the continuation rewritten into
    a template, and the probability-based verdict on it. A failed template (no pronoun to make a slot of) has no
    template, losses or verdict, and is left out of every Prob-TANGO figure."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="tango_templates")
    generation = models.OneToOneField(Generation, on_delete=models.CASCADE, related_name="tango_template")
    cut = models.TextField(help_text="the continuation up to its second pronoun")
    neutralized = models.TextField(help_text="the cut rewritten with singular they")
    template = models.TextField(null=True, blank=True, help_text="with {nom}/{acc}/{gen_att}/{gen_pred}/{ref} slots")
    failed = models.BooleanField()
    losses = models.JSONField(null=True, blank=True, help_text="base pronoun -> mean token loss")
    prediction = models.CharField(max_length=8, choices=BASE_CHOICES, blank=True)
    correct = models.BooleanField(null=True, blank=True, help_text="[m_prob]: the lowest-loss family is the gold one")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(failed=True, template__isnull=True, correct__isnull=True, prediction="")
                    | Q(failed=False, template__isnull=False, correct__isnull=False, losses__isnull=False)
                ),
                name="tango_template_failed_has_no_verdict",
            ),
        ]
        indexes = [models.Index(fields=["job", "failed"])]

    def __str__(self) -> str:
        return f"Prob-TANGO of generation {self.generation_id}"
