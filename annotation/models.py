import secrets

from django.conf import settings
from django.db import connection, models, router
from django.db.models import F, Q

from accounts.models import Project, default_project_id
from annotation.schema import DEFAULT_LABELS, FLAG_SETS, PECULIARITIES
from common.deletion import delete_in_batches
from generation.models import Generation, Job, Pair
from generation.models.datasets import BASE_CHOICES
from generation.models.jobs import SETTING_CHOICES

NOMINAL, ORDINAL, INTERVAL = "nominal", "ordinal", "interval"
SCALE_CHOICES = [
    (NOMINAL, "nominal"),
    (ORDINAL, "ordinal (labels in the declared order)"),
    (INTERVAL, "interval (numeric labels)"),
]


def _default_labels() -> list[str]:
    return list(DEFAULT_LABELS)


def json_column(model: type[models.Model], name: str, value):
    """A JSON column's value read by raw SQL, decoded as the model's field decodes it on every database."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.JSONField), f"{model.__name__}.{name} is not a JSON column"
    return field.from_db_value(value, None, connection)  # type: ignore[arg-type]  # a plain column: no expression


def new_public_id() -> str:
    """Opaque item ids for annotators: random, so they reveal neither order, cell nor source. Never led by `-`: a CSV
    export would have to neutralise such a cell (common/safe_csv.py), and the id read back would not match."""
    token = secrets.token_urlsafe(12)
    return "_" + token[1:] if token.startswith("-") else token


class PoolQuerySet(models.QuerySet):
    def delete(self) -> tuple[int, dict[str, int]]:
        """Deletes the pools with every row of theirs in batches (common/deletion.py): a crowd-sized pool's
        annotations are past the 65,535 parameters of one PostgreSQL statement."""
        return delete_in_batches(self, delete=super().delete)


class Pool(models.Model):
    name = models.SlugField(max_length=64, unique=True)
    labels = models.JSONField(default=_default_labels, help_text="the pronoun label set annotators choose from")
    # The flags annotators may tick beside the label (annotation.schema.FLAG_SETS): the generations' peculiarities,
    # or a stereotype pair pool's pitfalls (docs/domain.md, 'Stereotype pair benchmarks').
    flags = models.CharField(
        max_length=16,
        choices=[(name, name) for name in FLAG_SETS],
        default=PECULIARITIES,
        db_default=PECULIARITIES,
        help_text="the set of flags annotators may tick",
    )
    # The label rates count (docs/domain.md, "Bring your own study"): empty means `misgendering`, which a pool whose
    # set lacks it must replace by one of its own labels (annotation.labelset.positive_label).
    positive_label = models.CharField(
        max_length=64, blank=True, help_text="the label rates count; empty: misgendering (the set must have it)"
    )
    # The pool's scale (docs/domain.md, "Scales"): nominal labels are categories; ordinal ones are ranked in the
    # declared order; interval ones are numbers. Agreement, the human value of an item and the Alt-Test's alignment
    # follow it (analysis.metrics.scales).
    scale = models.CharField(max_length=16, choices=SCALE_CHOICES, default=NOMINAL, db_default=NOMINAL)
    # On an ordinal or interval pool, rates may count every label at or above this one (empty: none).
    positive_at_least = models.CharField(
        max_length=64, blank=True, help_text="ordinal/interval: rates count labels at or above this one"
    )
    per_cell = models.PositiveIntegerField(null=True, blank=True, help_text="generations per cell when sampled")
    seed = models.BigIntegerField(null=True, blank=True)
    jobs = models.ManyToManyField(Job, blank=True, related_name="pools")
    pass_mark = models.FloatField(
        default=0.8, help_text="share of training items an annotator must get right before the real queue opens"
    )
    fast_seconds = models.FloatField(
        default=3.0, help_text="decisions quicker than this many seconds count as fast on the quality dashboard"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    # The team it belongs to (docs/domain.md, "Projects"): its members alone see the pool; admins see every pool.
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="pools", default=default_project_id)
    # The current guidelines' version (docs/domain.md, 'A study others can check'), kept here beside the versions
    # themselves so that the annotator's save reads it with the pool's row it already locks (no extra statement).
    guideline_version = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # An active pool (docs/domain.md, "Spending people's labels where they count"): the judge run whose probabilities
    # drew it (a plain id: annotation never imports judging) and the budget, the expected number of contexts drawn.
    active_run_id = models.PositiveIntegerField(null=True, blank=True, editable=False)
    active_budget = models.FloatField(null=True, blank=True, editable=False)

    objects = PoolQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    def delete(self, using=None, keep_parents=False) -> tuple[int, dict[str, int]]:
        """Deletes the pool with every row of its in batches, as `PoolQuerySet.delete` does."""
        rows = Pool._base_manager.using(using or router.db_for_write(Pool, instance=self)).filter(pk=self.pk)
        return delete_in_batches(rows, delete=lambda: super(Pool, self).delete(using=using, keep_parents=keep_parents))


class PoolStamp(models.Model):
    """The pool's change stamp: a new token each time something that its report or quality page reads is written
    (`annotation.services.stamp.pool_changed`); the report cache is keyed by it. A row of its own, so that saving a
    `Pool` whose token in memory is old never writes that token back, and a bump locks no pool row."""

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, primary_key=True, related_name="stamp")
    token = models.CharField(max_length=32)

    def __str__(self) -> str:
        return f"{self.pool_id}: {self.token}"


class PoolGuideline(models.Model):
    """One version of a pool's guidelines (Markdown). An edit adds a version; none is ever changed or deleted."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="guidelines")
    version = models.PositiveIntegerField()
    text = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pool", "version"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "version"], name="pool_guideline_unique_version"),
            models.CheckConstraint(condition=Q(version__gte=1), name="pool_guideline_version_from_1"),
        ]

    def __str__(self) -> str:
        return f"{self.pool} guidelines v{self.version}"


STUDY = "study"
GOLD = "gold"
TRAINING = "training"
ITEM_KINDS = [
    (STUDY, "study item"),
    (GOLD, "gold item (known answer, hidden among study items)"),
    (TRAINING, "training item (qualification round)"),
]


FREE_SETTING = "free"
# A job's settings, and the free-text import's own: `free` or whatever setting a researcher's file names.
ITEM_SETTING_CHOICES = [*SETTING_CHOICES, (FREE_SETTING, "free text (imported)")]
SETTING_PATTERN = r"^[a-z][a-z0-9_-]{0,15}$"


class PoolItem(models.Model):
    """One generation to annotate. Cell fields and automatic verdicts are copied here so that imported generations
    (which have no job) and sampled ones look the same to the analysis. None of these reach annotators except
    `public_id`, `context` and `continuation`.
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="items")
    public_id = models.CharField(max_length=32, unique=True, default=new_public_id, editable=False)
    generation = models.ForeignKey(
        Generation, null=True, blank=True, on_delete=models.PROTECT, related_name="pool_items"
    )
    # A stereotype pair pool's item (docs/domain.md, 'Stereotype pair benchmarks'): the pair it shows, its sentences
    # copied into `context` and `continuation`; `dataset` is the pair's benchmark dataset, never shown.
    pair = models.ForeignKey(Pair, null=True, blank=True, on_delete=models.PROTECT, related_name="pool_items")
    # The cell: model x dataset x setting x pronoun.
    model_name = models.CharField(max_length=200)
    dataset = models.CharField(
        max_length=64, help_text="dataset kind: misgendered, ruff or tango; a templates dataset's own name"
    )
    # Free-text generations (docs/domain.md, "Bring your own study") name their own setting (default `free`) and may
    # leave the pronoun unstated (empty); the heuristic has no verdict on such an item (null), never "correct".
    setting = models.CharField(max_length=16, choices=ITEM_SETTING_CHOICES)
    pronoun = models.CharField(max_length=8, choices=BASE_CHOICES, blank=True)
    sample_index = models.PositiveSmallIntegerField(null=True, blank=True)
    template = models.TextField(help_text="instance text with its mask marker; empty for free-text generations")
    context = models.TextField()
    continuation = models.TextField()
    heuristic_correct = models.BooleanField(null=True, blank=True)
    first_pronoun = models.CharField(max_length=32, blank=True)
    # Imports only: where the row came from and what the file said the heuristic gave.
    source_file = models.CharField(max_length=300, blank=True)
    source_line = models.PositiveIntegerField(null=True, blank=True)
    source_key = models.CharField(max_length=64, blank=True, help_text="sha256 identifying an imported row")
    source_correct = models.BooleanField(null=True, blank=True)
    # The item's own id in a free-text generations file (docs/domain.md, "Bring your own study": `item`): people's
    # and judges' label files name items by it (or by `public_id`).
    external_id = models.CharField(max_length=200, blank=True, help_text="the item's id in its imported file")
    # Quality control: gold and training items carry their expected answer; neither ever enters a study metric.
    kind = models.CharField(max_length=8, choices=ITEM_KINDS, default=STUDY)
    gold_label = models.CharField(max_length=64, blank=True)
    gold_extraneous = models.BooleanField(null=True, blank=True)
    explanation = models.TextField(blank=True)
    # An active pool's items: the probability pi that the draw included the item's context (all its samples share it).
    inclusion_probability = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "generation"], condition=Q(generation__isnull=False), name="pool_item_unique_generation"
            ),
            models.UniqueConstraint(
                fields=["pool", "source_key"], condition=~Q(source_key=""), name="pool_item_unique_source_key"
            ),
            models.UniqueConstraint(
                fields=["pool", "pair"], condition=Q(pair__isnull=False), name="pool_item_unique_pair"
            ),
            models.UniqueConstraint(
                fields=["pool", "external_id"], condition=~Q(external_id=""), name="pool_item_unique_external_id"
            ),
            models.CheckConstraint(condition=Q(setting__regex=SETTING_PATTERN), name="pool_item_setting_valid"),
            models.CheckConstraint(condition=Q(kind=STUDY) | ~Q(gold_label=""), name="pool_item_gold_has_label"),
        ]
        indexes = [
            models.Index(fields=["pool", "model_name", "dataset", "setting", "pronoun"]),
            # A pool's training (or gold) items, for the qualification counts on the annotator API's hot path. Not a
            # partial index: the save's query passes the kind as a parameter, and a prepared statement's generic plan
            # could not use one (it scanned the whole pool).
            models.Index(fields=["pool", "kind"], name="pool_item_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.pool} item {self.public_id}"


class Assignment(models.Model):
    """Work for one annotator: `position` is the item's place in that annotator's own random order."""

    # No single-column indexes on the keys: each leads one of the composite indexes below, and every save rewrites
    # this row's index entries (the `annotated` flag changes).
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    item = models.ForeignKey(PoolItem, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    position = models.PositiveIntegerField()
    # Whether this annotator has annotated the item. Written by the one save path (annotation_submit, in the same
    # transaction as the annotation) and by `assign` for new rows, so that the next open item is the first entry of
    # an index rather than a walk past everything already done.
    annotated = models.BooleanField(default=False, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["annotator", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="assignment_unique_item_annotator"),
            models.UniqueConstraint(fields=["pool", "annotator", "position"], name="assignment_unique_position"),
        ]
        indexes = [
            # The annotator's queue in order, with the flag: place, length and done count without reading rows.
            models.Index(fields=["annotator", "pool", "position", "annotated"], name="assignment_queue"),
            # The items still to do, in order: the annotator API's "next" is this index's first entry.
            models.Index(
                fields=["annotator", "pool", "position"], condition=Q(annotated=False), name="assignment_open"
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} for annotator {self.annotator_id}, place {self.position}"


ORIGIN_CONCORD = "concord"
ORIGIN_IMPORTED = "imported"
ANNOTATION_ORIGINS = [(ORIGIN_CONCORD, "made in Concord"), (ORIGIN_IMPORTED, "imported from a file")]


class Annotation(models.Model):
    # No index of its own: the unique (item, annotator) index serves lookups by item, and every save writes one
    # index fewer.
    item = models.ForeignKey(PoolItem, on_delete=models.CASCADE, related_name="annotations", db_index=False)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotations")
    label = models.CharField(max_length=64)
    extraneous = models.BooleanField(default=False)
    notes = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    seconds = models.FloatField(default=0, help_text="time spent on the item, summed over visits")
    # The idempotency key of the save that wrote it last: a save sent again with the same key changes nothing
    # (docs/domain.md, "Assignment and the annotator's queue").
    idempotency_key = models.CharField(max_length=64, blank=True, editable=False)
    # The pool's guideline version in force when the annotation was last saved; null: the pool had none then.
    guideline_version = models.PositiveIntegerField(null=True, blank=True)
    # Where the label was made: on Concord's annotation page (`concord`) or elsewhere and imported (`imported`,
    # annotation.services.label_import). Both are human labels everywhere. A database default too: the annotator's
    # save writes its row with its own SQL (annotation/services/annotation.py), which leaves this column out.
    origin = models.CharField(
        max_length=16, choices=ANNOTATION_ORIGINS, default=ORIGIN_CONCORD, db_default=ORIGIN_CONCORD
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="annotation_unique_item_annotator"),
            models.CheckConstraint(condition=Q(seconds__gte=0), name="annotation_seconds_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"annotation of item {self.item_id} by annotator {self.annotator_id}: {self.label}"


class ExtraneousSpan(models.Model):
    """A marked extraneous gendered word: character offsets into the item's continuation."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="spans")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()

    class Meta:
        ordering = ["start"]
        constraints = [
            models.CheckConstraint(condition=Q(start__lt=F("end")), name="span_start_before_end"),
            models.UniqueConstraint(fields=["annotation", "start", "end"], name="span_unique"),
        ]

    def __str__(self) -> str:
        return f"[{self.start}, {self.end}) of annotation {self.annotation_id}"


class Referent(models.Model):
    """Whom one pronoun token of a distractor item's continuation refers to (docs/domain.md, 'RUFF with distractors'):
    code-point offsets into the continuation, the word as it stands there, and the annotator's choice."""

    TARGET, OTHER, UNCLEAR = "target", "other", "unclear"
    CHOICES = [(TARGET, "target"), (OTHER, "other person"), (UNCLEAR, "unclear")]

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="referents")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    word = models.CharField(max_length=32)
    referent = models.CharField(max_length=8, choices=CHOICES)

    class Meta:
        ordering = ["start"]
        constraints = [
            models.CheckConstraint(condition=Q(start__lt=F("end")), name="referent_start_before_end"),
            models.UniqueConstraint(fields=["annotation", "start"], name="referent_one_per_token"),
            models.CheckConstraint(condition=Q(referent__in=["target", "other", "unclear"]), name="referent_choice"),
        ]

    def __str__(self) -> str:
        return f"{self.word!r} [{self.start}, {self.end}) -> {self.referent}"


class Adjudication(models.Model):
    """A researcher's verdict on an overlap item whose annotators disagree (label, extraneous flag or marked words);
    the originals are kept. A field left empty/null was not adjudicated."""

    item = models.OneToOneField(PoolItem, on_delete=models.CASCADE, related_name="adjudication")
    label = models.CharField(max_length=64, blank=True)
    extraneous = models.BooleanField(null=True, blank=True)
    spans = models.JSONField(null=True, blank=True, help_text="adjudicated extraneous spans, [[start, end], ...]")
    referents = models.JSONField(
        null=True, blank=True, help_text="distractor items: adjudicated referents, [[start, end, referent], ...]"
    )
    notes = models.TextField(blank=True)
    adjudicator = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"adjudication of item {self.item_id}"


# What an import's pages and API call its state: its job's status, and its phase while it runs.
IMPORT_STATUSES = ("queued", "reading", "writing", "done", "failed", "cancelled")


class PoolImport(models.Model):
    """An import of generation files into a pool, run in the background (docs/domain.md, "The annotation pool"): a
    job of the `pool_import` kind (annotation/services/imports/import_kind.py), whose input is the uploaded files
    (`generation.JobInput`, by their index) and whose own row is this one: its arguments and its outcome. Its state
    is its job's (status, phase, times, and the lease of its chunk)."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, primary_key=True, related_name="pool_import")
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="import_jobs")
    kind = models.CharField(max_length=8, choices=ITEM_KINDS, default=STUDY)
    file_names = models.JSONField(default=list)
    bytes_total = models.BigIntegerField(default=0)
    rows_read = models.PositiveIntegerField(default=0)
    rows_written = models.PositiveIntegerField(default=0)
    items_created = models.PositiveIntegerField(default=0)
    heuristic_mismatches = models.PositiveIntegerField(default=0)
    written = models.BooleanField(default=False, help_text="the import ended with every row written")
    errors = models.JSONField(default=list, help_text="FILE:LINE: problem, the first ones (the import wrote nothing)")
    error_count = models.PositiveIntegerField(default=0)
    # What `import_generations` takes besides the files (docs/domain.md, "Bring your own study"): `labels` (the
    # declared label set, or absent), `positive`, and `codebook` ({"name", "text"}: a free-text dataset's families).
    options = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-job_id"]

    def __str__(self) -> str:
        return f"import {self.pk} into pool {self.pool_id}"


PROLIFIC = "prolific"
PLATFORMS = [(PROLIFIC, "Prolific")]


def new_study_token() -> str:
    """A study link's secret: 256 random bits, URL-safe (docs/guide-researcher.md, "Recruiting on Prolific")."""
    return secrets.token_urlsafe(32)


class Recruitment(models.Model):
    """A pool's study on a crowd platform: the link participants follow, how much each does and the codes they get
    (docs/domain.md, "Recruiting on a crowd platform"). One per pool; closing keeps it, and its participants."""

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, related_name="recruitment")
    platform = models.CharField(max_length=16, choices=PLATFORMS, default=PROLIFIC)
    token = models.CharField(max_length=64, unique=True, default=new_study_token, editable=False)
    is_open = models.BooleanField(default=True)
    items_per_person = models.PositiveIntegerField(help_text="study items each participant annotates")
    completion_code = models.CharField(max_length=64)
    screened_code = models.CharField(
        max_length=64, blank=True, help_text="shown to one who fails the training round; empty: no code"
    )
    max_people = models.PositiveIntegerField(null=True, blank=True, help_text="participants at most; empty: no limit")
    timeout_minutes = models.PositiveIntegerField(
        default=60, help_text="an idle participant's open study items go back to the queue after this long"
    )
    # The pool's overlap rule for participants, as `assign` takes it: `overlap` study items get `raters` people.
    overlap = models.PositiveIntegerField(default=0)
    raters = models.PositiveIntegerField(default=2)
    overlap_items = models.JSONField(default=list, editable=False, help_text="the overlap items' ids, drawn once")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(items_per_person__gte=1), name="recruitment_items_per_person_positive"),
            models.CheckConstraint(condition=Q(timeout_minutes__gte=1), name="recruitment_timeout_positive"),
            models.CheckConstraint(condition=Q(raters__gte=2), name="recruitment_raters_at_least_2"),
        ]

    def __str__(self) -> str:
        return f"recruitment for pool {self.pool_id} ({'open' if self.is_open else 'closed'})"


class Participant(models.Model):
    """One person who came through a study link: a pseudonymous annotator of that pool alone. The platform's ids live
    here and nowhere else: reports, exports, bundles and the audit trail know only the account's pseudonym."""

    COMPLETED, SCREENED = "completed", "screened"
    OUTCOMES = [(COMPLETED, "completed"), (SCREENED, "screened out (failed the training round)")]

    recruitment = models.ForeignKey(Recruitment, on_delete=models.CASCADE, related_name="participants")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participant")
    participant_id = models.CharField(max_length=64)
    study_id = models.CharField(max_length=64, blank=True)
    session_id = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(help_text="the last visit of the link or the finish page")
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=OUTCOMES, blank=True)
    code_shown = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["started_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["recruitment", "participant_id"], name="participant_unique_id"),
        ]

    def __str__(self) -> str:
        return f"participant {self.pk} of recruitment {self.recruitment_id}"  # never the platform's id
