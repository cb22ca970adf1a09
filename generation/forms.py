from __future__ import annotations

from typing import Any

from django import forms
from rest_framework import serializers

from generation.models import Dataset, LanguageModel, PronounForm
from generation.parameters import (
    ChoiceListField,
    JobParameterError,
    JobParameters,
    JobParametersSerializer,
    NamedRowField,
    job_parameters_validate,
)
from generation.pronouns import BASES
from generation.selectors import model_list

# Fields of the definition that the job form leaves out: a page queues generation jobs only.
NOT_ON_THE_FORM = ("kind", "options")
CHOICE_LABELS = {"pre": "pre-[MASK]", "post": "post-[MASK]", "open": "open (TANGO datasets)"}
DEFAULT_CHOICES = {"settings": ["pre", "post"]}  # the masked datasets' two settings; TANGO's open is ticked by hand
# The form starts as a small job (2 instances per pronoun: 80 continuations over 4 pronouns, 2 settings, 5 samples),
# which runs in minutes on a CPU; the API and the command keep the definition's defaults (every instance).
FORM_INITIAL = {"per_pronoun": 2}


def _form_field(name: str, field: serializers.Field) -> forms.Field:
    """The form field that parses what the definition's field takes (generation/parameters.py); checking the
    values is the definition's job, so that the page says what the API and the command say."""
    help_text = str(field.help_text or "")
    initial = FORM_INITIAL.get(name, None if field.default is serializers.empty else field.default)
    if isinstance(field, NamedRowField):
        return forms.ChoiceField(help_text=help_text, initial=initial)  # choices are read per request
    if isinstance(field, ChoiceListField):
        return forms.MultipleChoiceField(
            choices=[(value, CHOICE_LABELS.get(value, value)) for value in field.choices],
            initial=DEFAULT_CHOICES.get(name, list(field.choices)),
            widget=forms.CheckboxSelectMultiple,
            help_text=help_text,
        )
    optional = not field.required and field.allow_null
    if isinstance(field, serializers.BooleanField):
        return forms.BooleanField(required=False, initial=initial, help_text=help_text)
    if isinstance(field, serializers.IntegerField):
        return forms.IntegerField(required=not optional, initial=initial, help_text=help_text)
    if isinstance(field, serializers.FloatField):
        return forms.FloatField(required=not optional, initial=initial, help_text=help_text)
    if isinstance(field, serializers.ChoiceField):
        choices = list(field.choices.items())
        if not field.required:
            choices = [("", "default"), *choices]
        return forms.ChoiceField(choices=choices, required=field.required, initial=initial, help_text=help_text)
    return forms.CharField(required=not optional, initial=initial, help_text=help_text)


class JobForm(forms.Form):
    """The admin's job form, built from the one definition of a job's parameters (generation/parameters.py). The
    fields only parse; the definition checks every field that parsed, so that every error comes back in one round
    (and says the same as the API and the command). `parameters` holds the validated job."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.parameters: JobParameters | None = None
        for name, field in JobParametersSerializer().fields.items():
            if name not in NOT_ON_THE_FORM:
                self.fields[name] = _form_field(name, field)
        rows: dict[str, list[tuple[str, str]]] = {
            "model": [(m.name, m.name) for m in model_list()],
            "dataset": [(d.name, f"{d.name} ({d.kind})") for d in Dataset.objects.order_by("name")],
        }
        self.fields["model"].choices = rows["model"]  # type: ignore[attr-defined]
        self.fields["dataset"].choices = rows["dataset"]  # type: ignore[attr-defined]
        self.fields["dataset"].required = True
        # A templates dataset brings its own families (ey, fae, ...): they are offered too, and none ticked means all
        # of the chosen dataset's.
        families = list(dict.fromkeys([*BASES, *PronounForm.objects.order_by("pk").values_list("base", flat=True)]))
        pronouns = self.fields["pronouns"]
        pronouns.choices = [(family, family) for family in families]  # type: ignore[attr-defined]
        pronouns.required = False
        pronouns.help_text = "the ticked families run: the chosen dataset's, all ticked at first (none ticked: all)"
        self.fields["settings"].help_text = "the ticked settings run: pre and post, TANGO's open (none ticked: all)"
        if not LanguageModel.objects.filter(name=self.fields["model"].initial).exists():
            self.fields["model"].initial = None

    def clean(self):
        cleaned = super().clean() or {}
        fields = JobParametersSerializer().fields
        # An empty optional field means its default (a choice left at "default", an empty text field).
        parsed = {
            name: value
            for name, value in cleaned.items()
            if name not in self.errors and not (value in ("", []) and not fields[name].required)
        }
        for name in ("model", "dataset"):  # the definition needs both; a bad one already carries its error
            parsed.setdefault(name, "")
        try:
            self.parameters = job_parameters_validate(**parsed)
        except JobParameterError as exc:
            for name, message in exc.errors.items():
                if name not in self.errors:
                    self.add_error(name if name in self.fields else None, message)
        return cleaned


class TemplatesImportForm(forms.Form):
    """The admin's upload of a templates dataset (docs/domain.md, 'Your own templates'): the same files and arguments
    as `import_dataset templates`."""

    name = forms.SlugField(max_length=64, help_text="the dataset's name (letters, digits, - and _)")
    codebook = forms.FileField(help_text="CSV: base, nom, acc, pos_dep, pos_ind, ref (one family a row)")
    templates = forms.FileField(help_text="CSV or JSONL (.jsonl): id, template and optionally group")
    names = forms.FileField(required=False, help_text="optional: one name a line, for {name}")
    names_per_template = forms.IntegerField(min_value=1, max_value=1000, initial=15, help_text="name draws")
    seed = forms.IntegerField(min_value=0, max_value=2**32 - 1, initial=42, help_text="the name draw's seed")
