"""Judges (a registered model with a versioned prompt template), their runs over a pool, and the machine labels.

A judge's name groups its versions: every row is one version and is never edited, so a run keeps the exact template
it scored with (docs/domain.md, 'Machine raters').
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Pool, PoolItem
from generation.models import GenerationJob, LanguageModel


class JudgeMode(models.TextChoices):
    LIKELIHOOD = "likelihood", "likelihood (mean log-probability of each option)"
    SAMPLING = "sampling", "sampling (k samples, majority vote)"


class Judge(models.Model):
    name = models.SlugField(max_length=64)
    version = models.PositiveIntegerField()
    model = models.ForeignKey(LanguageModel, on_delete=models.PROTECT, related_name="judges")
    mode = models.CharField(max_length=10, choices=JudgeMode.choices, default=JudgeMode.LIKELIHOOD)
    template = models.TextField(help_text="the prompt, with {context} {pronouns} {generation} {options}")
    # A list of [label, option text] pairs, not an object: the order is part of the judge (ties go to the first
    # option, the prompt lists them in it), and PostgreSQL's jsonb does not keep the keys of an object in order.
    options = models.JSONField(help_text="[[label, option text scored after the prompt], ...] in order")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="judge_unique_version"),
            models.CheckConstraint(condition=Q(version__gte=1), name="judge_version_positive"),
            models.CheckConstraint(condition=~Q(template=""), name="judge_template_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def option_map(self) -> dict[str, str]:
        """label -> option text, in the judge's order."""
        return {label: text for label, text in self.options}

    @property
    def origin(self) -> str:
        return f"judge:{self.name}"


JUDGE_KIND = "judge"  # the job kind a judge run's work is (judging/kinds.py)


class JudgeRun(models.Model):
    """One judge version over one pool's items. Its work runs as a job of kind `judge` (chunks, leases, progress,
    cancel, resume); `job` is that job."""

    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="runs")
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="judge_runs")
    job = models.OneToOneField(
        GenerationJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="judge_run"
    )
    mode = models.CharField(max_length=10, choices=JudgeMode.choices)
    k = models.PositiveSmallIntegerField(default=1, help_text="samples per item (sampling mode)")
    temperature = models.FloatField(default=1.0, help_text="sampling temperature (sampling mode)")
    seed = models.BigIntegerField(default=0)
    total_items = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(k__gte=1), name="judge_run_k_positive"),
            models.CheckConstraint(condition=Q(temperature__gt=0), name="judge_run_temperature_positive"),
        ]

    def __str__(self) -> str:
        return f"judge run {self.pk}: {self.judge} on {self.pool}"

    @property
    def state(self) -> str:
        if self.job is not None:
            return self.job.status
        return "done" if self.total_items and self.labels.count() >= self.total_items else "queued"


class MachineLabel(models.Model):
    """A machine rater's label of one item: the label, its confidence, every option's score and the exact prompt."""

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="labels")
    item = models.ForeignKey(PoolItem, on_delete=models.CASCADE, related_name="machine_labels")
    label = models.CharField(max_length=32, help_text="blank when no sample named an option (sampling mode)")
    confidence = models.FloatField()
    scores = models.JSONField(help_text="label -> mean log-probability (likelihood) or vote share (sampling)")
    prompt = models.TextField(help_text="the exact text the options were scored after")
    samples = models.JSONField(default=list, blank=True, help_text="the sampled answers (sampling mode)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "item"]
        constraints = [
            models.UniqueConstraint(fields=["run", "item"], name="machine_label_unique_item"),
            models.CheckConstraint(condition=Q(confidence__gte=0) & Q(confidence__lte=1), name="machine_label_conf"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} item {self.item_id}: {self.label}"
