from collections.abc import Sequence
from typing import cast

from django import forms

from accounts.models import Project
from annotation.active import JudgeRunChoice
from annotation.models import GOLD, SCALE_CHOICES, STUDY, TRAINING
from annotation.schema import LABEL_NAMES
from annotation.services.pool import DRAW_INSTANCES, DRAW_PER_SAMPLE_INDEX, POOL_SEED


class JobChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, job) -> str:
        return (
            f"job {job.pk}: {job.model.name} on {job.dataset.name} ({', '.join(job.generation_run.settings)}; "
            f"{', '.join(job.generation_run.pronouns)}; {job.generation_run.samples} samples)"
        )


class PoolSampleForm(forms.Form):
    name = forms.SlugField(max_length=64)
    jobs = JobChoiceField(
        queryset=None,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="finished jobs to draw from; none ticked: every finished job",
    )
    draw = forms.ChoiceField(
        choices=[
            (DRAW_INSTANCES, "whole instances: random instances per cell, each with all its samples (the paper's)"),
            (DRAW_PER_SAMPLE_INDEX, "per sample index: per-cell / samples random instances from each sample index"),
        ],
        initial=DRAW_INSTANCES,
        required=False,
        widget=forms.RadioSelect,
    )
    instances = forms.IntegerField(
        min_value=1, initial=5, required=False, help_text="instances per cell (whole instances)"
    )
    per_cell = forms.IntegerField(
        min_value=1, initial=25, required=False, help_text="generations per cell (per sample index)"
    )
    seed = forms.IntegerField(initial=POOL_SEED)
    allow_short = forms.BooleanField(required=False, help_text="keep cells with too few generations")
    active = forms.BooleanField(
        required=False,
        help_text="an active draw from one job: contexts the judge is unsure about are drawn more often, each item "
        "keeping its inclusion probability (the draw, instances and per-cell above do not apply)",
    )
    judge_run = forms.TypedChoiceField(
        choices=[],
        coerce=int,
        empty_value=None,
        required=False,
        help_text="active: a finished judge run over the job (no job ticked: the run's job)",
    )
    budget = forms.FloatField(
        min_value=0, required=False, help_text="active: the expected number of contexts people label"
    )

    project = forms.ModelChoiceField(
        queryset=Project.objects.none(), to_field_name="name", required=False, empty_label="the default project",
        help_text="its members alone see the pool (docs/domain.md, 'Projects')",
    )  # fmt: skip

    def __init__(self, *args, jobs, projects=None, judge_runs: Sequence[JudgeRunChoice] = (), **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelMultipleChoiceField, self.fields["jobs"]).queryset = jobs
        cast(forms.ModelChoiceField, self.fields["project"]).queryset = (
            Project.objects.all() if projects is None else projects
        )
        # Offered by the judge's name and the job it judged, as the report and the jobs page name them.
        self.judge_runs = {run.run_id: run for run in judge_runs}
        cast(forms.ChoiceField, self.fields["judge_run"]).choices = [("", "none (not an active draw)")] + [
            (run.run_id, run.label) for run in judge_runs
        ]

    def clean_jobs(self) -> list[int] | None:
        return [job.pk for job in self.cleaned_data["jobs"]] or None

    def clean(self) -> dict:
        data = super().clean() or {}
        run = self.judge_runs.get(data.get("judge_run") or 0)
        if data.get("active") and run is not None and not data.get("jobs"):
            data["jobs"] = [run.job_id]  # the run names its job; ticking it as well is not needed
        return data

    def clean_draw(self) -> str:
        return self.cleaned_data["draw"] or DRAW_INSTANCES

    def clean_instances(self) -> int:
        return self.cleaned_data["instances"] or 5

    def clean_per_cell(self) -> int:
        return self.cleaned_data["per_cell"] or 25


class PoolFilesForm(forms.Form):
    """A new pool for a researcher's own files (the "New pool from files" page): its name, label set and project;
    the generations, people's labels and judges' labels are uploaded on its page after."""

    name = forms.SlugField(max_length=64, help_text="letters, digits, - and _; the pool's address")
    labels = forms.CharField(
        label="Label set", initial="misgendering,correct",
        help_text="comma separated, at least two, e.g. misgendering,correct or yes,no,unsure",
    )  # fmt: skip
    positive = forms.CharField(
        required=False, label="Positive label", help_text="the label rates count, when the set has no misgendering"
    )
    scale = forms.ChoiceField(
        choices=SCALE_CHOICES, initial="nominal", required=False,
        help_text="nominal (categories), ordinal (the labels in the order written: a rating scale) or interval "
        "(numeric labels)",
    )  # fmt: skip
    positive_at_least = forms.CharField(
        required=False, label="Positive at least", help_text="ordinal or interval: rates count labels from this one up"
    )
    project = forms.ModelChoiceField(
        queryset=Project.objects.none(), to_field_name="name", empty_label=None,
        help_text="its members alone see the pool",
    )  # fmt: skip

    def __init__(self, *args, projects, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["project"]).queryset = projects

    def clean_labels(self) -> list[str]:
        return [label.strip() for label in self.cleaned_data["labels"].split(",") if label.strip()]

    def clean_scale(self) -> str:
        return self.cleaned_data["scale"] or "nominal"


class UsernamesField(forms.MultipleChoiceField):
    """Ticked annotators; a value may also list several usernames separated by commas (the form's older shape).
    Whether each is an annotator is the assignment service's to say, so an unknown name is reported by name."""

    def to_python(self, value) -> list[str]:
        names = []
        for part in super().to_python(value):
            names += [name.strip() for name in part.split(",") if name.strip()]
        return list(dict.fromkeys(names))

    def valid_value(self, value) -> bool:
        return True

    def validate(self, value) -> None:
        super().validate(value)
        # No username holds one, and PostgreSQL cannot even compare against one.
        if any("\x00" in name for name in value):
            raise forms.ValidationError("A username holds a NUL character.", code="null_characters_not_allowed")


class AssignForm(forms.Form):
    annotators = UsernamesField(widget=forms.CheckboxSelectMultiple, help_text="the annotators to share the pool")
    overlap = forms.IntegerField(min_value=0, initial=0, help_text="items that get two annotators (paper: 200)")
    raters = forms.IntegerField(
        min_value=2, initial=2, required=False, help_text="different annotators per overlap item (default 2)"
    )
    seed = forms.IntegerField(initial=0)

    def __init__(self, *args, usernames: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["annotators"]).choices = [(name, name) for name in usernames]


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ".csv,text/csv"}))
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        files = data if isinstance(data, list | tuple) else [data]
        return [super(MultipleFileField, self).clean(file, initial) for file in files if file] or super().clean(
            None, initial
        )


class ImportGenerationsForm(forms.Form):
    csv_files = MultipleFileField(
        label="Files", help_text="CSV in the released sample format; several files at once are one import"
    )
    kind = forms.ChoiceField(
        choices=[
            (STUDY, "study items"),
            (GOLD, "gold items (with gold_label; known answers hidden among the study items)"),
            (TRAINING, "training items (with gold_label and explanation; the qualification round)"),
        ],
        initial=STUDY,
        widget=forms.RadioSelect,
    )
    # Free-text generations (docs/domain.md, "Bring your own study"): what `import_generations` takes besides.
    labels = forms.CharField(
        required=False, label="Label set", help_text="comma separated, e.g. misgendering,correct; empty: the pool's"
    )
    positive = forms.CharField(
        required=False, label="Positive label", help_text="the label rates count, when the set has no misgendering"
    )
    scale = forms.ChoiceField(
        required=False,
        label="Scale",
        choices=[("", "the pool's (nominal for a new pool)"), *SCALE_CHOICES],
        help_text="ordinal: the labels in the order given; interval: numeric labels",
    )
    positive_at_least = forms.CharField(
        required=False, label="Positive at least", help_text="ordinal or interval: rates count labels from this one up"
    )
    codebook = forms.FileField(
        required=False, label="Codebook", help_text="a free-text dataset's pronoun families (default MISGENDERED's)"
    )


REFERENT_CHOICES = [("", "not adjudicated"), ("target", "target"), ("other", "other person"), ("unclear", "unclear")]


class AdjudicationForm(forms.Form):
    item = forms.CharField(widget=forms.HiddenInput)
    label = forms.ChoiceField(choices=[], required=False)
    extraneous = forms.TypedChoiceField(
        choices=[("", "not adjudicated"), ("yes", "yes"), ("no", "no")],
        coerce=lambda value: {"yes": True, "no": False}.get(value),
        empty_value=None,
        required=False,
    )
    decide_spans = forms.BooleanField(
        required=False, label="Settle the marked words", help_text="keep exactly the words ticked below"
    )
    spans = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    notes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, labels: list[str], words=(), tokens=(), **kwargs):
        super().__init__(*args, **kwargs)
        # Shown with the form by the adjudication page: machine raters' labels as badges, and each referent choice
        # with what the annotators chose for it.
        self.machine_labels: list = []
        self.referent_rows: list[tuple] = []
        # Distractor items: one choice per pronoun token of the text (annotation/referents.py), none chosen at first;
        # all of them or none are settled (the service names a token left out).
        self.referent_names: list[str] = []
        for token in tokens:
            name = f"referent_{token['start']}_{token['end']}"
            self.fields[name] = forms.ChoiceField(
                choices=REFERENT_CHOICES, required=False, label=f"\u201c{token['word']}\u201d at {token['start']}"
            )
            self.referent_names.append(name)
        # Starts empty: a verdict is chosen, never pre-selected.
        cast(forms.ChoiceField, self.fields["label"]).choices = [("", "not adjudicated")] + [
            (label, LABEL_NAMES.get(label, label)) for label in labels
        ]
        spans = cast(forms.MultipleChoiceField, self.fields["spans"])
        spans.choices = [(word.value, f"{word.word!r} ({', '.join(word.annotators)})") for word in words]
        # Any well-formed span is accepted here; whether it lies in the text is the service's to say.
        spans.valid_value = lambda value: _span(value) is not None  # type: ignore[method-assign]

    def clean_spans(self) -> list[list[int]]:
        return [span for value in self.cleaned_data["spans"] if (span := _span(value)) is not None]

    def spans_decided(self) -> list[list[int]] | None:
        return self.cleaned_data["spans"] if self.cleaned_data["decide_spans"] else None

    def referents_decided(self) -> list[dict] | None:
        """The referents chosen, as an annotator sends them; None when none was chosen (not adjudicated)."""
        chosen = []
        for name in self.referent_names:
            if value := self.cleaned_data.get(name):
                _, start, end = name.split("_")
                chosen.append({"start": int(start), "end": int(end), "referent": value})
        return chosen or None


def _span(value: str) -> list[int] | None:
    start, _, end = value.partition("-")
    if not (start.isdigit() and end.isdigit()):
        return None
    return [int(start), int(end)]
