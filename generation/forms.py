from __future__ import annotations

from typing import Any

from django import forms
from rest_framework import serializers

from generation.models import Dataset, LanguageModel
from generation.parameters import (
    ChoiceListField,
    JobParameterError,
    JobParameters,
    JobParametersSerializer,
    NamedRowField,
    job_parameters_validate,
)
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
        if not LanguageModel.objects.filter(name=self.fields["model"].initial).exists():
            self.fields["model"].initial = None

    def clean(self):
        cleaned = super().clean() or {}
        fields = JobParametersSerializer().fields
        # An empty optional field means its default (a choice left at "default", an empty text field).
        parsed = {
            name: value
            for name, value in cleaned.items()
            if name not in self.errors and not (value == "" and not fields[name].required)
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
