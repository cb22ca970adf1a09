"""`{% load labels %}`: a label's display form on every page (`no_pronoun` reads "no pronoun")."""

from django import template

from annotation.schema import label_display

register = template.Library()


@register.filter
def label_name(label: object) -> str:
    return label_display(label)


@register.filter
def label_names(labels: list[str]) -> str:
    """A pool's label set as a sentence's list: "correct, misgendering, no pronoun"."""
    return ", ".join(label_display(label) for label in labels)
