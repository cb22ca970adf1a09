"""Template tags of the judging app, for pages of other apps that offer a judge run (the jobs page)."""

from django import template

from judging.models import Judge, JudgeMode

register = template.Library()


@register.simple_tag
def judge_names() -> list[str]:
    """Every judge Concord can run, by name, once each (a run takes the name's latest version); an external judge's
    labels are imported, never run, so it is not offered."""
    runnable = Judge.objects.exclude(mode=JudgeMode.IMPORTED)
    return sorted(set(runnable.values_list("name", flat=True)))
