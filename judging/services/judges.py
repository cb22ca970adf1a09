"""Adding a judge, or a new version of one (docs/domain.md, 'Machine raters').

A judge row is never edited: `judge_add` with a name that exists writes the next version when anything that changes
its labels differs (model, mode, template, options), and returns the latest version unchanged otherwise. Runs point
at the version they used, so an edit never changes an old run's labels or prompts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from django.db import IntegrityError, transaction
from django.db.models import Max

from common.audit import CREATE, audit_record
from generation.jobs.services import JobParameterError
from generation.models import LanguageModel
from judging.models import Judge, JudgeMode
from judging.prompts import DEFAULT_TEMPLATE, TemplateError, default_options, template_check

NAME = re.compile(r"^[-a-zA-Z0-9_]{1,64}$")


def judge_latest(*, name: str) -> Judge | None:
    return Judge.objects.filter(name=name).select_related("model").order_by("-version").first()


def judge_add(
    *,
    name: str,
    model: str | LanguageModel,
    template: str | None = None,
    mode: str = JudgeMode.LIKELIHOOD,
    options: Mapping[str, str] | None = None,
    created_by=None,
) -> tuple[Judge, bool]:
    """The judge's version with these settings: (row, created). Every problem is reported at once, by field."""
    errors: dict[str, str] = {}
    if not isinstance(name, str) or not NAME.match(name):
        errors["name"] = f"must be 1-64 letters, digits, - or _, got {name!r}"
    chosen = model if isinstance(model, LanguageModel) else LanguageModel.objects.filter(name=model).first()
    if chosen is None:
        known = ", ".join(LanguageModel.objects.values_list("name", flat=True)) or "none"
        errors["model"] = f"unknown model {model!r}; registered: {known}"
    runnable = [value for value in JudgeMode.values if value != JudgeMode.IMPORTED]
    if mode not in runnable:  # an external judge comes with its labels (judging.services.imports)
        errors["mode"] = f"unknown mode {mode!r}; use {' or '.join(runnable)}"
    template = DEFAULT_TEMPLATE if template is None else template
    options = dict(default_options() if options is None else options)
    pairs = [[label, text] for label, text in options.items()]
    try:
        template_check(template=template, options=options)
    except TemplateError as exc:
        errors["template"] = str(exc)
    current = judge_latest(name=name) if "name" not in errors else None
    if current is not None and current.external:
        errors["name"] = f"{name!r} is an external judge (its labels are imported); give this judge a name of its own"
    if errors or chosen is None:
        raise JobParameterError(errors)
    for _ in range(3):  # two people adding the same name at once: the loser takes the next number
        latest = judge_latest(name=name)
        if latest is not None and (latest.model_id, latest.mode, latest.template, latest.options) == (
            chosen.pk,
            mode,
            template,
            pairs,
        ):
            return latest, False
        version = (Judge.objects.filter(name=name).aggregate(v=Max("version"))["v"] or 0) + 1
        try:
            with transaction.atomic():
                judge = Judge.objects.create(
                    name=name,
                    version=version,
                    model=chosen,
                    mode=mode,
                    template=template,
                    options=pairs,
                    created_by=created_by,
                )
                audit_record(
                    event="judge.add",
                    obj=judge,
                    actor=created_by,
                    action=CREATE,
                    data={"name": name, "version": version, "model": chosen.name, "mode": mode},
                )
            return judge, True
        except IntegrityError:
            continue
    raise JobParameterError({"name": f"judge {name!r} is being changed by someone else; try again"})
