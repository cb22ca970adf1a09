"""A job's parameters, defined once: `JobParameters` (what a validated job is) and `JobParametersSerializer` (how raw
input becomes one, every problem reported at once under its field's name).

The job form (generation/forms.py), the REST API (generation/apis.py) and `manage.py generate` all build their fields
from the serializer below and validate with `job_parameters_validate`; the job services store what it returns. The
decoding defaults are `JOB_DEFAULTS` (generation/models/jobs.py, docs/domain.md, 'Decoding'); the upper bounds come from
settings (`CONCORD_MAX_NUM_BEAMS`, `CONCORD_MAX_SAMPLES`, `CONCORD_MAX_NEW_TOKENS`, `CONCORD_MAX_BATCH_SIZE`, read
from the environment in config/settings.py), so that no job can take a worker's memory (docs/domain.md, 'Jobs').

How to add a field (e.g. `engine`, `distractors`):
1. add it to `JobParameters` with its default;
2. add a serializer field of the same name to `JobParametersSerializer` (`help_text` becomes the form's help and the
   command's `--help`); a rule that involves other fields (only for some datasets, ...) goes into
   `JobParametersSerializer.check_together`, adding its message under the field's name;
3. keep it in a column of the same name of the generation kind's table, `GenerationRun` (and a migration), listed
   in `RUN_PARAMETERS` (generation/jobs/generation_kind.py); another kind keeps it in its own table.
The form gets a field, the API a key and `generate` a flag (`--field-name`) without further edits: integer, float,
choice, boolean and text fields map themselves (see generation/forms.py and the command's `add_arguments`).

Kinds other than generation (generation/jobs/kinds.py) use the same definition: `kind` names the handler, which
may leave out the dataset and validates its own `options`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings as django_settings
from django.db.models import Q
from rest_framework import serializers

from common.errors import FieldErrors
from generation.contexts import ALL_SETTINGS, SETTINGS
from generation.datasets.gifi import PARTS as GIFI_PARTS
from generation.datasets.registry import dataset_kind
from generation.datasets.ruff_distractors import SAMPLE_SEED_CHOICES, SAMPLE_SEEDS
from generation.engines import ENGINES
from generation.engines.base import DEFAULT_PROB_SCORE, NO_PROB_SCORE, PROB_SCORES
from generation.jobs.kinds import job_kind_get, job_kinds
from generation.models import DEFAULT_MODEL_NAME, GENERATION_KIND, JOB_DEFAULTS, Dataset, LanguageModel
from generation.pronouns import BASES

MAX_SEED = 2**32 - 1
_FAMILY = re.compile(r"^[a-z]{1,8}$")


class JobParameterError(FieldErrors, ValueError):
    """Bad job parameters; `errors` maps each bad field to what is wrong with it."""


@dataclass(frozen=True)
class JobParameters:
    """A validated job. `model` and `dataset` are rows; lists are in canonical order without duplicates."""

    model: LanguageModel
    dataset: Dataset | None
    kind: str = GENERATION_KIND
    pronouns: list[str] = field(default_factory=lambda: list(BASES))
    settings: list[str] = field(default_factory=lambda: list(SETTINGS))
    samples: int = JOB_DEFAULTS.samples
    max_new_tokens: int = JOB_DEFAULTS.max_new_tokens
    top_k: int = JOB_DEFAULTS.top_k
    top_p: float = JOB_DEFAULTS.top_p
    num_beams: int = JOB_DEFAULTS.num_beams
    seed: int = JOB_DEFAULTS.seed
    per_pronoun: int | None = None
    batch_size: int | None = None
    engine: str | None = None  # a name in ENGINES; None: the worker's (CONCORD_ENGINE), generation/engines/
    # RUFF with distractors (docs/domain.md, 'RUFF with distractors'): only the instances of this count / this sample.
    distractors: int | None = None
    sample_seed: int | None = None
    # mean (the paper's mean token loss), sum (RUFF's summed log-probability) or none (no probability scoring)
    prob_score: str = DEFAULT_PROB_SCORE
    part: str | None = None  # GIFI (docs/domain.md, 'GIFI'): only the prompts of this part; None: every part
    options: dict[str, Any] = field(default_factory=dict)

    def batch_size_or_model(self) -> int:
        """The chunk size cap: the job's batch size, else the model's, never above CONCORD_MAX_BATCH_SIZE."""
        return min(self.batch_size or self.model.batch_size, bound("CONCORD_MAX_BATCH_SIZE"))


def bound(setting: str) -> int:
    return int(getattr(django_settings, setting))


def _text_ok(value: str) -> str | None:
    """Text that the database can store: no NUL byte, no lone surrogate."""
    if "\x00" in value:
        return "must not contain a NUL byte"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid text (a lone surrogate)"
    return None


class WholeNumberField(serializers.IntegerField):
    """A whole number in [minimum, maximum]; the maximum may name a setting (read when validating). The message
    names the range, the setting and the value given."""

    def __init__(self, *, minimum: int, maximum: int | None = None, maximum_setting: str | None = None, **kwargs):
        self.minimum, self.maximum, self.maximum_setting = minimum, maximum, maximum_setting
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool) or (isinstance(data, float) and not data.is_integer()):
            self.fail("invalid")
        value = super().to_internal_value(data)
        top = bound(self.maximum_setting) if self.maximum_setting else self.maximum
        if value < self.minimum or (top is not None and value > top):
            where = f"from {self.minimum} to {top}" if top is not None else f">= {self.minimum}"
            limit = f" ({self.maximum_setting})" if self.maximum_setting else ""
            raise serializers.ValidationError(f"must be a whole number {where}{limit}, got {data!r}")
        return value


class ProbabilityField(serializers.FloatField):
    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        value = super().to_internal_value(data)
        if not 0 < value <= 1:
            raise serializers.ValidationError(f"must be in (0, 1], got {data!r}")
        return value


class ChoiceListField(serializers.ListField):
    """A list of choices (or one comma-separated string), returned in the choices' order without duplicates."""

    def __init__(self, *, choices: Sequence[str], what: str, **kwargs):
        self.choices, self.what = tuple(choices), what
        super().__init__(child=serializers.ChoiceField(choices=self.choices), **kwargs)

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = [part.strip() for part in data.split(",") if part.strip()]
        if not isinstance(data, list | tuple) or not all(isinstance(v, str) for v in data):
            raise serializers.ValidationError(f"give a list of {self.what}")
        unknown = [v for v in data if v not in self.choices]
        if unknown:
            allowed = ", ".join(self.choices)
            raise serializers.ValidationError(f"unknown {self.what} {', '.join(map(ascii, unknown))}; use {allowed}")
        if not data:
            raise serializers.ValidationError(f"choose at least one of {', '.join(self.choices)}")
        return [v for v in self.choices if v in data]

    def to_representation(self, value):
        return list(value)


class PronounListField(ChoiceListField):
    """The job's base pronouns: any names here; `check_together` holds them to the dataset's own families (a templates
    dataset brings its own, docs/domain.md 'Your own templates') and puts them in the codebook's order. `choices`
    are the built-in kinds' four, which the form shows (with the datasets' other families added)."""

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = [part.strip() for part in data.split(",") if part.strip()]
        if not isinstance(data, list | tuple) or not all(isinstance(v, str) for v in data):
            raise serializers.ValidationError(f"give a list of {self.what}")
        if not data:
            raise serializers.ValidationError(f"choose at least one of {', '.join(self.choices)}")
        bad = [v for v in data if not _FAMILY.match(v)]
        if bad:
            raise serializers.ValidationError(
                f"{', '.join(map(ascii, bad))}: a pronoun family is 1-8 lower-case letters (he, she, they, xe, ey, ...)"
            )
        return list(dict.fromkeys(data))


class NamedRowField(serializers.CharField):
    """A row given by its name (or the row itself, from Python); an unknown name lists the known ones."""

    def __init__(
        self,
        *,
        model: type[LanguageModel] | type[Dataset],
        what: str,
        none_known: str = "none",
        unusable: tuple[Q, str] | None = None,
        **kwargs,
    ):
        """`unusable`: the rows that exist but cannot be named here (a filter), and why."""
        self.model, self.what, self.none_known, self.unusable = model, what, none_known, unusable
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, self.model):
            return data
        if not isinstance(data, str):
            raise serializers.ValidationError(f"give the {self.what}'s name")
        problem = _text_ok(data)
        if problem:
            raise serializers.ValidationError(f"the name {problem}")
        rows = self.model._default_manager.all()
        if self.unusable is not None:
            rows = rows.exclude(self.unusable[0])
        row = rows.filter(name=data).first()
        if row is None and self.unusable is not None and self.model._default_manager.filter(name=data).exists():
            raise serializers.ValidationError(f"{self.what} {data!r} {self.unusable[1]}")
        if row is None:
            known = ", ".join(rows.order_by("name").values_list("name", flat=True))
            raise serializers.ValidationError(
                f"unknown {self.what} {data!r}; {self.known_word}: {known or self.none_known}"
            )
        return row

    @property
    def known_word(self) -> str:
        return "registered" if self.what == "model" else "imported"

    def to_representation(self, value):
        return getattr(value, "name", value)


class JobParametersSerializer(serializers.Serializer):
    """Parses and checks a job's parameters; every field's problem is reported at once (see the module docstring)."""

    kind = serializers.CharField(default=GENERATION_KIND, help_text="job kind (generation, or a registered kind)")
    model = NamedRowField(
        model=LanguageModel,
        what="model",
        default=DEFAULT_MODEL_NAME,
        help_text="registered model",
        # the model name of hand-written texts (the demo's) and an external judge's API model: they label rows, but
        # have nothing to run here
        unusable=(
            Q(source_kind__in=[LanguageModel.SourceKind.NONE, LanguageModel.SourceKind.EXTERNAL]),
            "has no weights to run (its texts were written by hand, or it is an API model recorded by its id)",
        ),
    )
    dataset = NamedRowField(
        model=Dataset,
        what="dataset",
        none_known="none (import one first)",
        required=False,
        allow_null=True,
        default=None,
        help_text="dataset name (misgendered, ruff, demo-ruff, ...)",
    )
    pronouns = PronounListField(
        choices=BASES,
        what="pronouns",
        required=False,
        help_text="base pronouns (default all of the dataset's: he, she, they, xe, or a templates dataset's own)",
    )
    settings = ChoiceListField(
        choices=ALL_SETTINGS,
        what="settings",
        required=False,
        help_text="generation settings: pre,post or one of them (default both); TANGO datasets have open only",
    )
    samples = WholeNumberField(
        minimum=1,
        maximum_setting="CONCORD_MAX_SAMPLES",
        default=JOB_DEFAULTS.samples,
        help_text="samples R per context",
    )
    max_new_tokens = WholeNumberField(
        minimum=1,
        maximum_setting="CONCORD_MAX_NEW_TOKENS",
        default=JOB_DEFAULTS.max_new_tokens,
        help_text="exactly this many new tokens",
    )
    top_k = WholeNumberField(minimum=0, default=JOB_DEFAULTS.top_k, help_text="0 turns top-k off")
    top_p = ProbabilityField(default=JOB_DEFAULTS.top_p, help_text="in (0, 1]")
    num_beams = WholeNumberField(
        minimum=1, maximum_setting="CONCORD_MAX_NUM_BEAMS", default=JOB_DEFAULTS.num_beams, help_text="beams"
    )
    seed = WholeNumberField(minimum=0, maximum=MAX_SEED, default=JOB_DEFAULTS.seed, help_text="sampling seed")
    per_pronoun = WholeNumberField(
        minimum=1, required=False, allow_null=True, default=None, help_text="first N instances per pronoun; empty = all"
    )
    batch_size = WholeNumberField(
        minimum=1,
        maximum_setting="CONCORD_MAX_BATCH_SIZE",
        required=False,
        allow_null=True,
        default=None,
        help_text="instances per chunk (one batch); empty = the model's batch size",
    )
    engine = serializers.ChoiceField(
        choices=list(ENGINES),
        required=False,
        allow_null=True,
        allow_blank=True,
        default=None,
        help_text=f"generation engine: {' or '.join(ENGINES)}; empty = the worker's (CONCORD_ENGINE, default hf)",
    )
    distractors = WholeNumberField(
        minimum=0,
        maximum=5,
        required=False,
        allow_null=True,
        default=None,
        help_text="RUFF with distractors: only instances with this many distractor sentences (0-5); empty = all",
    )
    sample_seed = serializers.ChoiceField(
        choices=SAMPLE_SEED_CHOICES,
        required=False,
        allow_null=True,
        allow_blank=True,
        default=None,
        help_text="RUFF with distractors: only RUFF's evaluation sample drawn with this seed "
        f"({', '.join(map(str, SAMPLE_SEEDS))}); none = all",
    )
    prob_score = serializers.ChoiceField(
        choices=[*PROB_SCORES, NO_PROB_SCORE],
        default=DEFAULT_PROB_SCORE,
        help_text="probability scoring: mean (the paper's mean token loss), sum (RUFF's summed log-probability) or "
        "none (skip it: the job samples only)",
    )
    part = serializers.ChoiceField(
        choices=list(GIFI_PARTS),
        required=False,
        allow_null=True,
        allow_blank=True,
        default=None,
        help_text=f"GIFI: only the prompts of this part ({', '.join(GIFI_PARTS)}); empty = every part",
    )
    options = serializers.DictField(required=False, default=dict, help_text="the job kind's own parameters")

    def to_internal_value(self, data):
        """Each field on its own, then the rules between fields among those that parsed: all errors in one round."""
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"non_field_errors": ["send an object of job parameters"]})
        values: dict[str, Any] = {}
        errors: dict[str, Any] = {}
        for name, field_ in self.fields.items():
            try:
                value = field_.run_validation(field_.get_value(data))
                if isinstance(field_, NamedRowField) and isinstance(value, str):
                    value = field_.to_internal_value(value)  # a default is a name too
            except serializers.ValidationError as exc:
                errors[name] = exc.detail
            except serializers.SkipField:
                continue
            else:
                values[name] = value
        self.check_together(values, errors)
        if errors:
            raise serializers.ValidationError(errors)
        return values

    def to_parameters(self) -> JobParameters:
        """The validated job (after `is_valid()`)."""
        return _parameters(self.validated_data)

    def check_together(self, values: dict[str, Any], errors: dict[str, Any]) -> None:
        """Rules between fields: the kind exists and says whether a dataset is needed; a dataset's kind says which
        settings it has (TANGO: open only). A field that already failed is not judged again."""
        kind = values.get("kind", GENERATION_KIND)
        handler = job_kind_get(kind) if "kind" not in errors else None
        if handler is None and "kind" not in errors:
            errors["kind"] = [f"unknown job kind {kind!r}; registered: {', '.join(job_kinds())}"]
        dataset = values.get("dataset")
        if handler is not None and handler.needs_dataset and dataset is None and "dataset" not in errors:
            errors["dataset"] = [f"a {kind} job needs a dataset"]
        if dataset is not None and "settings" not in errors:
            allowed = dataset_kind(dataset.kind).settings
            chosen = values.get("settings", list(allowed))
            wrong = [s for s in chosen if s not in allowed]
            if wrong:
                errors["settings"] = [
                    f"unknown settings {', '.join(map(repr, wrong))} for a {dataset.kind} dataset; use "
                    + ", ".join(allowed)
                ]
            else:
                values["settings"] = chosen
        if "pronouns" not in errors:
            _pronouns_check(values, errors, dataset_failed="dataset" in errors)
        if "engine" not in errors and "model" not in errors and "model" in values:
            _engine_check(values, errors)
        _distractors_check(values, errors)
        _part_check(values, errors)
        if handler is not None and "options" not in errors:
            try:
                values["options"] = handler.options_validate(options=values.get("options") or {}, values=values)
            except serializers.ValidationError as exc:
                errors["options"] = exc.detail


def _engine_check(values: dict[str, Any], errors: dict[str, Any]) -> None:
    """The engine can run this job here (installed, a model it reads, the model's device present): a clear error at
    creation instead of a failed job (generation/engines/)."""
    from generation.engines import EngineUnavailable, engine_check

    values["engine"] = values.get("engine") or None
    dataset = values.get("dataset")
    try:
        engine_check(
            engine=values["engine"],
            language_model=values["model"],
            num_beams=values.get("num_beams", 1),
            # A dataset of pairs has no masked instances to score: its job kind asks for what it needs itself.
            prob_score=values.get("prob_score", DEFAULT_PROB_SCORE)
            if dataset is not None and not dataset_kind(dataset.kind).pairs
            else NO_PROB_SCORE,
            scores_per_generation=dataset is not None and dataset_kind(dataset.kind).scores_per_generation,
        )
    except EngineUnavailable as exc:
        errors["engine"] = [str(exc)]


def _pronouns_check(values: dict[str, Any], errors: dict[str, Any], *, dataset_failed: bool) -> None:
    """The pronouns are families of the dataset's codebook (all of them when none are given), in its order; with no
    dataset (or a bad one), families of some dataset."""
    from generation.models import PronounForm
    from generation.selectors import dataset_codebook

    dataset = None if dataset_failed else values.get("dataset")
    if dataset is not None and dataset.pronoun_forms.exists():
        families: tuple[str, ...] = dataset_codebook(dataset=dataset).bases
    elif dataset_failed:
        families = tuple(dict.fromkeys([*BASES, *PronounForm.objects.order_by("pk").values_list("base", flat=True)]))
    else:
        families = BASES
    chosen = values.get("pronouns")
    if chosen is None:
        if dataset is not None:
            values["pronouns"] = list(families)
        return
    unknown = [v for v in chosen if v not in families]
    if unknown:
        where = f" of dataset {dataset.name!r}" if dataset is not None else ""
        errors["pronouns"] = [f"unknown pronouns {', '.join(map(ascii, unknown))}; use {', '.join(families)}{where}"]
        return
    values["pronouns"] = [v for v in families if v in chosen]


def _distractors_check(values: dict[str, Any], errors: dict[str, Any]) -> None:
    """--distractors and --sample-seed pick instances of a RUFF distractor set; elsewhere they are an error."""
    seed = values.get("sample_seed")
    values["sample_seed"] = None if seed in (None, "", "none") else int(str(seed))
    if values.get("distractors") is None and values["sample_seed"] is None:
        return
    dataset = values.get("dataset")
    if dataset is None or "dataset" in errors:
        return
    if not dataset.instances.filter(distractors__isnull=False).exists():
        for name in ("distractors", "sample_seed"):
            if values.get(name) is not None and name not in errors:
                errors[name] = [
                    f"dataset {dataset.name!r} is not a RUFF distractor set (import_dataset ruff-distractors)"
                ]


def _part_check(values: dict[str, Any], errors: dict[str, Any]) -> None:
    """--part picks the prompts of one part of a GIFI dataset; elsewhere it is an error."""
    values["part"] = values.get("part") or None
    dataset = values.get("dataset")
    if values["part"] is None or dataset is None or "dataset" in errors or "part" in errors:
        return
    if not dataset.instances.filter(template__meta__part=values["part"]).exists():
        errors["part"] = [f"dataset {dataset.name!r} has no {values['part']} prompts (import_dataset gifi)"]


def _parameters(values: dict[str, Any]) -> JobParameters:
    values = dict(values)
    values.setdefault("pronouns", list(BASES))
    if "settings" not in values:
        values["settings"] = list(dataset_kind(values["dataset"].kind).settings) if values.get("dataset") else []
    return JobParameters(**values)


def _first_message(detail: Any) -> str:
    if isinstance(detail, list | tuple):
        return "; ".join(_first_message(item) for item in detail)
    if isinstance(detail, dict):
        return "; ".join(f"{key}: {_first_message(value)}" for key, value in detail.items())
    return str(detail)


def job_parameters_validate(**raw: Any) -> JobParameters:
    """Check every parameter (names or rows for model and dataset, lists or comma strings for pronouns and
    settings); raise `JobParameterError` with every problem, each under its field's name."""
    fields = JobParametersSerializer().fields
    unknown = set(raw) - set(fields)
    if unknown:
        raise JobParameterError({name: "not a job parameter" for name in sorted(unknown)})
    # From Python, None means "the default" for a field that takes no null (pronouns, settings, ...).
    raw = {name: value for name, value in raw.items() if value is not None or fields[name].allow_null}
    serializer = JobParametersSerializer(data=raw)
    if not serializer.is_valid():
        raise JobParameterError({name: _first_message(detail) for name, detail in serializer.errors.items()})
    return serializer.to_parameters()
