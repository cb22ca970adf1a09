from django import forms

from annotation.schema import LABEL_NAMES


class PoolSampleForm(forms.Form):
    name = forms.SlugField(max_length=64)
    jobs = forms.CharField(required=False, help_text="comma-separated job ids; empty for every finished job")
    per_cell = forms.IntegerField(min_value=1, initial=25)
    seed = forms.IntegerField(initial=0)
    allow_short = forms.BooleanField(required=False, help_text="keep cells with too few generations")

    def clean_jobs(self) -> list[int] | None:
        value = self.cleaned_data["jobs"]
        try:
            ids = [int(part) for part in value.split(",") if part.strip()]
        except ValueError:
            raise forms.ValidationError("comma-separated job ids, e.g. 3,4") from None
        return ids or None


class AssignForm(forms.Form):
    annotators = forms.CharField(help_text="comma-separated usernames")
    overlap = forms.IntegerField(min_value=0, initial=0)
    seed = forms.IntegerField(initial=0)


class AdjudicationForm(forms.Form):
    item = forms.CharField(widget=forms.HiddenInput)
    label = forms.ChoiceField(choices=[])
    extraneous = forms.TypedChoiceField(
        choices=[("", "undecided"), ("yes", "yes"), ("no", "no")],
        coerce=lambda value: {"yes": True, "no": False}.get(value),
        empty_value=None,
        required=False,
    )
    notes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, labels: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["label"].choices = [(label, LABEL_NAMES.get(label, label)) for label in labels]
