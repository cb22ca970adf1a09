from django.db import models
from django.db.models import Q

from generation.datasets.base import DatasetKind
from generation.pronouns import BASES, FORMS

BASE_CHOICES = [(base, base) for base in BASES]
FORM_CHOICES = [(form, form) for form in FORMS]


class Dataset(models.Model):
    """One imported template set. `kind` picks the file format and the codebook; `name` tells imports apart."""

    name = models.SlugField(max_length=64, unique=True)
    kind = models.CharField(max_length=16, choices=DatasetKind.choices)
    source = models.CharField(max_length=500, help_text="the file it was imported from")
    import_signature = models.CharField(max_length=64, help_text="sha256 of the import's files and arguments")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class PronounForm(models.Model):
    """The dataset's codebook as stored: one spelling per base pronoun and case."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="pronoun_forms")
    base = models.CharField(max_length=8, choices=BASE_CHOICES)
    form = models.CharField(max_length=8, choices=FORM_CHOICES)
    surface = models.CharField(max_length=32)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "base", "form"], name="pronoun_form_unique"),
            models.CheckConstraint(condition=Q(surface__regex=r"^[a-z]+$"), name="pronoun_form_lowercase"),
        ]

    def __str__(self) -> str:
        return f"{self.dataset}: {self.base} {self.form} = {self.surface}"


class Template(models.Model):
    """A template row of the source file. `text` is as written there; `mask` is the marker that stands for the pronoun."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="templates")
    source_id = models.CharField(
        max_length=200, help_text="template_id (MISGENDERED); uid/occupation/participant/case (RUFF)"
    )
    line = models.PositiveIntegerField(help_text="line of the source file it was read from")
    text = models.TextField()
    mask = models.CharField(max_length=32)
    form = models.CharField(max_length=8, choices=FORM_CHOICES)
    meta = models.JSONField(default=dict, blank=True, help_text="other columns of the source row")

    class Meta:
        ordering = ["dataset", "line"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "source_id"], name="template_unique_source_id"),
            models.CheckConstraint(condition=~Q(mask=""), name="template_has_mask"),
        ]

    def __str__(self) -> str:
        return f"{self.dataset}#{self.source_id}"


class Instance(models.Model):
    """Template x base pronoun (x a name draw for MISGENDERED): the unit that is scored and generated from.

    `text` has names and declared pronouns filled in and the mask marker still in place; `correct_form` is the
    lower-case surface form that belongs at the mask. `ordinal` is the dataset order ("the first N per pronoun").
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="instances")
    template = models.ForeignKey(Template, on_delete=models.CASCADE, related_name="instances")
    pronoun = models.CharField(max_length=8, choices=BASE_CHOICES)
    draw = models.PositiveSmallIntegerField(default=0, help_text="which name draw (0 for RUFF)")
    name = models.CharField(max_length=64, blank=True)
    text = models.TextField()
    correct_form = models.CharField(max_length=32)
    ordinal = models.PositiveIntegerField()
    # RUFF with distractors (docs/domain.md, 'RUFF with distractors'); `distractors` is null on every other instance.
    # The target (the occupation) is the template's; the second person and their pronoun are the instance's.
    distractors = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="context sentences about the other person"
    )
    other_person = models.CharField(max_length=64, blank=True, help_text="the second person (RUFF's participant)")
    confuse_pronoun = models.CharField(max_length=32, blank=True, help_text="the second person's pronoun form")
    ruff_uid = models.CharField(max_length=64, blank=True, help_text="RUFF's uid, e.g. eo3_ep7_ip8")
    word = models.CharField(max_length=64, blank=True, help_text="RUFF's word: the person the slot refers to")
    sample_13 = models.BooleanField(default=False, help_text="in RUFF's evaluation sample drawn with seed 13")
    sample_17 = models.BooleanField(default=False, help_text="in RUFF's evaluation sample drawn with seed 17")
    sample_19 = models.BooleanField(default=False, help_text="in RUFF's evaluation sample drawn with seed 19")

    class Meta:
        ordering = ["dataset", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["template", "pronoun", "draw"], name="instance_unique_draw"),
            models.UniqueConstraint(fields=["dataset", "ordinal"], name="instance_unique_ordinal"),
        ]
        indexes = [
            models.Index(fields=["dataset", "pronoun", "ordinal"]),
            models.Index(fields=["dataset", "distractors", "ordinal"], name="instance_distractors"),
        ]

    def __str__(self) -> str:
        return f"{self.template} {self.pronoun} {self.name}".strip()

    @property
    def form(self) -> str:
        return self.template.form

    @property
    def mask(self) -> str:
        return self.template.mask
