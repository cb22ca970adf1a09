"""Template tags of the judging app, for pages of other apps that offer a judge run (the jobs page) or a panel
(the pool page)."""

from django import template

from judging.models import Judge, JudgeMode

register = template.Library()


@register.simple_tag
def judge_names() -> list[str]:
    """Every judge Concord can run, by name, once each (a run takes the name's latest version); an external judge's
    labels are imported, never run, so it is not offered."""
    runnable = Judge.objects.exclude(mode=JudgeMode.IMPORTED)
    return sorted(set(runnable.values_list("name", flat=True)))


@register.simple_tag
def pool_judge_runs(pool) -> list:
    """The finished judge runs whose labels reach the pool (the newest per judge and scope), for the panel form."""
    from judging.selectors import covering_runs

    return covering_runs(pool=pool)
