"""Judges (a registered model with a versioned prompt template), their runs over a pool, and the machine labels.

A judge's name groups its versions: every row is one version and is never edited, so a run keeps the exact template
it scored with (docs/domain.md, 'Machine raters').
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Pool, PoolItem
from generation.models import Generation, Job, LanguageModel


class JudgeMode(models.TextChoices):
    LIKELIHOOD = "likelihood", "likelihood (mean log-probability of each option)"
    SAMPLING = "sampling", "sampling (k samples, majority vote)"
    # An external judge's (an API model's) labels made elsewhere: `scores` hold its probabilities, if it gave any.
    IMPORTED = "imported", "imported (labels made elsewhere; never run by Concord)"


class Judge(models.Model):
    name = models.SlugField(max_length=64)
    version = models.PositiveIntegerField()
    model = models.ForeignKey(LanguageModel, on_delete=models.PROTECT, related_name="judges")
    mode = models.CharField(max_length=10, choices=JudgeMode.choices, default=JudgeMode.LIKELIHOOD)
    template = models.TextField(help_text="the prompt, with {context} {pronouns} {generation} {options}")
    # A list of [label, option text] pairs, not an object: the order is part of the judge (ties go to the first
    # option, the prompt lists them in it), and PostgreSQL's jsonb does not keep the keys of an object in order.
    options = models.JSONField(help_text="[[label, option text scored after the prompt], ...] in order")
    description = models.TextField(blank=True, help_text="what the judge is (an external judge's own words)")
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

    @property
    def external(self) -> bool:
        """An API model whose labels are imported: Concord records it and never runs it."""
        return self.mode == JudgeMode.IMPORTED


JUDGE_KIND = "judge"  # the job kind a judge run's work is (judging/kinds.py)
RUN_CONCORD = "concord"
RUN_IMPORTED = "imported"
RUN_PANEL = "panel"
RUN_ORIGINS = [
    (RUN_CONCORD, "run by Concord"),
    (RUN_IMPORTED, "imported from a file"),
    (RUN_PANEL, "a panel's labels, computed from its members' runs"),
]
CHECK_KIND = "judge_check"  # the job kind a check run's work is (judging/checks.py)


class JudgeRun(models.Model):
    """One judge version over one pool's items, or over every generation of one generation job (`source_job`):
    exactly one of the two, with its mode, samples per item (`k`), temperature and seed. The judge kind's own table
    (judging/kinds.py): its work runs as `job`, a job of kind `judge` (chunks, leases, progress, cancel, resume),
    and the run is written with that job, before any worker sees it. A run over a generation job counts for every
    pool drawn from that job: each pool item takes the label of its generation."""

    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="runs")
    pool = models.ForeignKey(Pool, null=True, blank=True, on_delete=models.CASCADE, related_name="judge_runs")
    source_job = models.ForeignKey(
        Job,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="judged_by",
        help_text="the generation job whose generations the run labels (a run over a job)",
    )
    job = models.OneToOneField(
        Job, on_delete=models.CASCADE, related_name="judge_run", help_text="the judge job that does the run's work"
    )
    mode = models.CharField(max_length=10, choices=JudgeMode.choices, help_text="likelihood, sampling or imported")
    k = models.PositiveIntegerField(default=1, help_text="samples per item (sampling mode; 1 otherwise)")
    temperature = models.FloatField(default=1.0, help_text="the sampling temperature (sampling mode; 1.0 otherwise)")
    seed = models.BigIntegerField(default=0)
    # `concord`: Concord ran it; `imported`: an external judge's labels read from a file (judging.services.imports),
    # its job a finished record that no worker runs; `panel`: a panel's labels, computed from its members' runs
    # (judging/panels.py; the members are its `members`), its job a finished record too.
    origin = models.CharField(max_length=16, choices=RUN_ORIGINS, default=RUN_CONCORD)
    source_file = models.CharField(max_length=300, blank=True, help_text="the imported file's name")
    # An imported run's labels as read (judging.services.imports.plan_digest): the same file imported again into
    # the same pool for the same judge version finds this run and writes nothing.
    source_digest = models.CharField(max_length=64, blank=True, db_index=True, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(pool__isnull=False) & Q(source_job__isnull=True))
                | (Q(pool__isnull=True) & Q(source_job__isnull=False)),
                name="judge_run_pool_or_job",
            ),
            models.CheckConstraint(condition=Q(k__gte=1), name="judge_run_k_positive"),
            models.CheckConstraint(condition=Q(temperature__gt=0), name="judge_run_temperature_positive"),
        ]

    def __str__(self) -> str:
        return f"judge run {self.pk}: {self.judge} on {self.scope}"

    @property
    def scope(self) -> str:
        """What the run labels: "pool NAME" or "job ID"."""
        return f"pool {self.pool}" if self.pool_id is not None else f"job {self.source_job_id}"

    @property
    def total_items(self) -> int:
        """The items (or generations) the run labels: its job's units."""
        return self.job.total_units

    @property
    def state(self) -> str:
        return self.job.status


class MachineLabel(models.Model):
    """A machine rater's label of one item (a pool run) or one generation (a run over a job): the label, its
    confidence, every option's score and the exact prompt."""

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="labels")
    item = models.ForeignKey(PoolItem, null=True, blank=True, on_delete=models.CASCADE, related_name="machine_labels")
    generation = models.ForeignKey(
        Generation, null=True, blank=True, on_delete=models.CASCADE, related_name="machine_labels"
    )
    label = models.CharField(max_length=64, help_text="blank when no sample named an option (sampling mode)")
    confidence = models.FloatField(null=True, blank=True, help_text="none: an imported label without one")
    scores = models.JSONField(help_text="label -> mean log-probability (likelihood) or vote share (sampling)")
    prompt = models.TextField(help_text="the exact text the options were scored after")
    samples = models.JSONField(default=list, blank=True, help_text="the sampled answers (sampling mode)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "item", "generation"]
        constraints = [
            models.UniqueConstraint(fields=["run", "item"], name="machine_label_unique_item"),
            models.UniqueConstraint(
                fields=["run", "generation"],
                condition=Q(generation__isnull=False),
                name="machine_label_unique_generation",
            ),
            models.CheckConstraint(
                condition=(Q(item__isnull=False) & Q(generation__isnull=True))
                | (Q(item__isnull=True) & Q(generation__isnull=False)),
                name="machine_label_item_or_generation",
            ),
            models.CheckConstraint(condition=Q(confidence__gte=0) & Q(confidence__lte=1), name="machine_label_conf"),
        ]

    def __str__(self) -> str:
        if self.item_id is None:
            return f"run {self.run_id} generation {self.generation_id}: {self.label}"
        return f"run {self.run_id} item {self.item_id}: {self.label}"


class PanelMember(models.Model):
    """One member run of a panel (docs/domain.md, "Judges a reviewer trusts": panel): the panel's run (origin
    `panel`) labels the members' common items with their plurality label and mean probabilities."""

    panel = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="members")
    # RESTRICT: a member run cannot be deleted alone, but goes with its pool (or job) and the panel together.
    member = models.ForeignKey(JudgeRun, on_delete=models.RESTRICT, related_name="panels")
    position = models.PositiveIntegerField(help_text="the member's place in the panel's list")

    class Meta:
        ordering = ["panel", "position"]
        constraints = [
            models.UniqueConstraint(fields=["panel", "member"], name="panel_member_once"),
            models.UniqueConstraint(fields=["panel", "position"], name="panel_member_position"),
        ]

    def __str__(self) -> str:
        return f"panel run {self.panel_id}: member run {self.member_id}"


CHECK_POSITION = "position"
CHECK_FAMILY_SWAP = "family_swap"
CHECK_CONTEXTUAL = "contextual"
CHECKS = [
    (CHECK_POSITION, "position consistency (every cyclic rotation of the options)"),
    (CHECK_FAMILY_SWAP, "family-swap invariance (the declared family swapped for each other family)"),
    (CHECK_CONTEXTUAL, "contextual calibration (content-free probes)"),
]


class CheckRun(models.Model):
    """A check of a judge version over a pool's items (docs/domain.md, "Judges a reviewer trusts"): position
    consistency, family-swap invariance or contextual calibration. Its work is a job of kind `judge_check`
    (judging/checks.py), written with this row; its labels are `CheckLabel`s, one per item and variant, never a
    judge run's machine labels (a check is no rater of the pool)."""

    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="check_runs")
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="judge_checks")
    kind = models.CharField(max_length=16, choices=CHECKS, help_text="which check")
    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="check_run")
    mode = models.CharField(max_length=10, choices=JudgeMode.choices)
    k = models.PositiveIntegerField(default=1)
    temperature = models.FloatField(default=1.0)
    seed = models.BigIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"check run {self.pk}: {self.kind} of {self.judge} on pool {self.pool}"

    @property
    def state(self) -> str:
        return self.job.status


class CheckLabel(models.Model):
    """The judge's label of one variant of one item in a check run. `variant`: the rotation ("0" is the template's
    order), the target family (`original` the item itself) or the probe (`original`, `n/a`, `empty`, `mask`)."""

    run = models.ForeignKey(CheckRun, on_delete=models.CASCADE, related_name="labels")
    item = models.ForeignKey(PoolItem, on_delete=models.CASCADE, related_name="check_labels")
    variant = models.CharField(max_length=64)
    label = models.CharField(max_length=32, blank=True)
    confidence = models.FloatField()
    scores = models.JSONField(help_text="label -> mean log-probability (likelihood) or vote share (sampling)")
    prompt = models.TextField()
    options = models.JSONField(help_text="[[label, option text], ...] in the order the prompt gave them")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "item", "variant"]
        constraints = [models.UniqueConstraint(fields=["run", "item", "variant"], name="check_label_once")]

    def __str__(self) -> str:
        return f"check run {self.run_id} item {self.item_id} {self.variant}: {self.label}"
