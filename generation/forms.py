from django import forms

from generation.contexts import SETTINGS
from generation.models import Dataset
from generation.pronouns import BASES
from generation.selectors import model_list


class JobForm(forms.Form):
    """The admin's job form; the service does the real validation (its errors are put on these fields)."""

    model = forms.ChoiceField()
    dataset = forms.ChoiceField()
    pronouns = forms.MultipleChoiceField(
        choices=[(b, b) for b in BASES], initial=list(BASES), widget=forms.CheckboxSelectMultiple
    )
    settings = forms.MultipleChoiceField(
        choices=[(s, f"{s}-[MASK]") for s in SETTINGS], initial=list(SETTINGS), widget=forms.CheckboxSelectMultiple
    )
    samples = forms.IntegerField(initial=5, min_value=1, help_text="samples R per context")
    max_new_tokens = forms.IntegerField(initial=50, min_value=1, help_text="exactly this many new tokens")
    top_k = forms.IntegerField(initial=50, min_value=0)
    top_p = forms.FloatField(initial=0.95, help_text="in (0, 1]")
    num_beams = forms.IntegerField(initial=1, min_value=1)
    seed = forms.IntegerField(initial=0, min_value=0)
    per_pronoun = forms.IntegerField(
        required=False, min_value=1, help_text="first N instances per pronoun; empty = all"
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = [(m.name, m.name) for m in model_list()]
        self.fields["dataset"].choices = [(d.name, f"{d.name} ({d.kind})") for d in Dataset.objects.order_by("name")]
