"""Template tags of the judging app, for pages of other apps that offer a judge run (the jobs page)."""

from django import template

from judging.models import Judge

register = template.Library()


@register.simple_tag
def judge_names() -> list[str]:
    """Every judge's name, once each (a run takes the name's latest version)."""
    return sorted(set(Judge.objects.values_list("name", flat=True)))
