"""Judges and runs in the admin (admins only). Saving a judge never edits a version: a change of model, mode,
template or options adds the next version (`judge_add`), so old runs keep theirs. Adding a judge run queues it as a
job (`judge_run_create`), which the jobs page then shows with its progress, cancel and resume."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from generation.jobs.services import JobParameterError
from judging.kinds import judge_run_parameters_validate
from judging.models import Judge, JudgeMode, JudgeRun
from judging.prompts import DEFAULT_TEMPLATE, TemplateError, default_options, template_check
from judging.services.judges import judge_add
from judging.services.runs import judge_run_create


class JudgeForm(forms.ModelForm):
    class Meta:
        model = Judge
        fields = ["name", "model", "mode", "template", "options"]
        help_texts = {"options": 'a list of [label, option text] pairs, e.g. [["correct", " correct"], ...]'}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.instance.pk:
            self.initial.setdefault("template", DEFAULT_TEMPLATE)
            self.initial.setdefault("options", [[label, text] for label, text in default_options().items()])

    def clean(self):
        data = super().clean() or {}
        options = data.get("options")
        if not isinstance(options, list) or not all(isinstance(pair, list) and len(pair) == 2 for pair in options):
            raise forms.ValidationError({"options": "give a list of [label, option text] pairs"})
        if data.get("template") is not None:
            try:
                template_check(template=data["template"], options=dict(options))
            except TemplateError as exc:
                raise forms.ValidationError({"template": str(exc)}) from None
        return data


@admin.register(Judge)
class JudgeAdmin(admin.ModelAdmin):
    form = JudgeForm
    list_display = ("name", "version", "model", "mode", "created_at")
    list_filter = ("name", "mode")

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        try:
            judge, _ = judge_add(
                name=data["name"],
                model=data["model"],
                template=data["template"],
                mode=data["mode"],
                options=dict(data["options"]),
                created_by=request.user,
            )
        except JobParameterError as exc:
            raise forms.ValidationError(str(exc)) from None
        obj.pk, obj.version = judge.pk, judge.version  # the admin's messages and redirect name the new version


class JudgeRunForm(forms.ModelForm):
    # The run's parameters are its job's (judging/kinds.py validates them): form fields, not columns of the run.
    mode = forms.ChoiceField(choices=JudgeMode.choices)
    k = forms.IntegerField(min_value=0, initial=1, help_text="samples per item (sampling mode)")
    temperature = forms.FloatField(initial=1.0, help_text="sampling temperature (sampling mode)")
    seed = forms.IntegerField(initial=0)

    class Meta:
        model = JudgeRun
        fields = ["judge", "pool", "source_job"]
        help_texts = {"source_job": "or a finished generation job, to judge all its generations (not both)"}

    def clean(self):
        data = super().clean() or {}
        if data.get("judge"):
            try:
                judge_run_parameters_validate(
                    pool=data.get("pool"), job=data.get("source_job"), judge=data["judge"], mode=data.get("mode"),
                    k=data.get("k"), temperature=data.get("temperature"), seed=data.get("seed") or 0,
                )  # fmt: skip
            except JobParameterError as exc:
                fields = {"job": "source_job"}
                raise forms.ValidationError({fields.get(key, key): text for key, text in exc.errors.items()}) from None
        return data


@admin.register(JudgeRun)
class JudgeRunAdmin(admin.ModelAdmin):
    form = JudgeRunForm
    list_display = ("id", "judge", "pool", "source_job", "mode", "k", "temperature", "seed", "state", "created_at")
    list_select_related = ("judge", "pool", "job", "source_job")

    def get_readonly_fields(self, request, obj=None):
        fields = ("judge", "pool", "source_job", "job", "mode", "k", "temperature", "seed", "total_items")
        return fields if obj else ()

    def save_model(self, request, obj, form, change):
        if change:
            return  # a run's parameters are fixed; queue a new run instead
        data = form.cleaned_data
        run, _ = judge_run_create(
            pool=data.get("pool"), job=data.get("source_job"), judge=data["judge"], mode=data["mode"], k=data["k"], temperature=data["temperature"],
            seed=data["seed"] or 0, rerun=True, created_by=request.user,
        )  # fmt: skip
        obj.pk = run.pk
