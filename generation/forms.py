from django import forms

from generation.contexts import OPEN, SETTINGS
from generation.models import JOB_DEFAULTS, Dataset
from generation.pronouns import BASES
from generation.selectors import model_list
from generation.services.jobs import JobParameterError, job_parameters_validate


class JobForm(forms.Form):
    """The admin's job form. The fields only parse; the ranges and names are checked by the service, on every field
    that parsed, so that every error comes back in one round (and says the same as the API and the command)."""

    model = forms.ChoiceField()
    dataset = forms.ChoiceField()
    pronouns = forms.MultipleChoiceField(
        choices=[(b, b) for b in BASES], initial=list(BASES), widget=forms.CheckboxSelectMultiple
    )
    settings = forms.MultipleChoiceField(
        choices=[(s, f"{s}-[MASK]") for s in SETTINGS] + [(OPEN, "open (TANGO datasets)")],
        initial=list(SETTINGS),
        widget=forms.CheckboxSelectMultiple,
    )
    samples = forms.IntegerField(initial=JOB_DEFAULTS.samples, help_text="samples R per context")
    max_new_tokens = forms.IntegerField(initial=JOB_DEFAULTS.max_new_tokens, help_text="exactly this many new tokens")
    top_k = forms.IntegerField(initial=JOB_DEFAULTS.top_k, help_text="0 turns top-k off")
    top_p = forms.FloatField(initial=JOB_DEFAULTS.top_p, help_text="in (0, 1]")
    num_beams = forms.IntegerField(initial=JOB_DEFAULTS.num_beams)
    seed = forms.IntegerField(initial=JOB_DEFAULTS.seed)
    per_pronoun = forms.IntegerField(required=False, help_text="first N instances per pronoun; empty = all")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = [(m.name, m.name) for m in model_list()]
        self.fields["dataset"].choices = [(d.name, f"{d.name} ({d.kind})") for d in Dataset.objects.order_by("name")]

    def clean(self):
        cleaned = super().clean()
        parsed = {name: value for name, value in cleaned.items() if name not in self.errors}
        for name in ("model", "dataset"):  # the service needs both; a bad one already carries its error
            parsed.setdefault(name, "")
        try:
            job_parameters_validate(**parsed)
        except JobParameterError as exc:
            for field, message in exc.errors.items():
                if field not in self.errors:
                    self.add_error(field if field in self.fields else None, message)
        return cleaned
