from django import forms
from django.contrib import admin

from generation.models import Dataset, Instance, Job, JobChunk, LanguageModel, ModelEndpoint, PronounForm, Template

# The endpoint settings the admin's model form asks for (source kind "a model behind an API endpoint").
ENDPOINT_FIELDS = ("base_url", "api", "api_key_env", "concurrency", "rpm", "timeout", "max_retries", "price_in",
                   "price_out", "logprobs")  # fmt: skip


class LanguageModelForm(forms.ModelForm):
    """A model's row, and for an endpoint model its endpoint's settings, checked as `manage.py model_add` checks
    them (generation/services/models.py): the key variable set, the endpoint reachable and listing the model."""

    base_url = forms.URLField(
        required=False, assume_scheme="https", help_text="an endpoint's base URL (source kind: API endpoint)"
    )
    api = forms.ChoiceField(choices=ModelEndpoint.Api.choices, initial="openai", required=False)
    api_key_env = forms.CharField(required=False, help_text="the environment variable holding the API key")
    concurrency = forms.IntegerField(required=False, min_value=1, initial=4)
    rpm = forms.IntegerField(required=False, min_value=1, help_text="requests per minute at most")
    timeout = forms.FloatField(required=False, initial=60.0)
    max_retries = forms.IntegerField(required=False, min_value=0, initial=5)
    price_in = forms.DecimalField(required=False, help_text="USD per million input tokens")
    price_out = forms.DecimalField(required=False, help_text="USD per million output tokens")
    logprobs = forms.ChoiceField(choices=ModelEndpoint.Logprobs.choices, initial="auto", required=False)

    class Meta:
        model = LanguageModel
        fields = ["name", "source_kind", "source", "gguf_file", "dtype", "device", "load_in_4bit", "batch_size"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        endpoint = ModelEndpoint.objects.filter(model_id=self.instance.pk).first() if self.instance.pk else None
        for name in ENDPOINT_FIELDS:
            if endpoint is not None:
                self.fields[name].initial = getattr(endpoint, name)
        self.endpoint_fields: dict | None = None

    def clean(self):
        from generation.parameters import JobParameterError
        from generation.services.models import endpoint_settings_check

        data = super().clean() or {}
        if data.get("source_kind") != LanguageModel.SourceKind.ENDPOINT:
            return data
        settings = {name: data.get(name) for name in ENDPOINT_FIELDS}
        settings["base_url"] = settings["base_url"] or ""
        settings["api"] = settings["api"] or "openai"
        settings["logprobs"] = settings["logprobs"] or "auto"
        try:
            self.endpoint_fields = endpoint_settings_check(
                name=data.get("name") or "", model=data.get("source") or "", **settings
            )
        except JobParameterError as exc:
            for field, message in exc.errors.items():
                self.add_error(field if field in self.fields else None, message)
        return data


@admin.register(LanguageModel)
class LanguageModelAdmin(admin.ModelAdmin):
    list_display = ("name", "source_kind", "source", "dtype", "device", "load_in_4bit", "batch_size")
    form = LanguageModelForm

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if form.endpoint_fields is not None:
            ModelEndpoint.objects.update_or_create(model=obj, defaults=form.endpoint_fields)


class PronounFormInline(admin.TabularInline):
    model = PronounForm
    extra = 0


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "source", "created_at")
    inlines = [PronounFormInline]


@admin.register(Template)
class TemplateAdmin(admin.ModelAdmin):
    list_display = ("dataset", "source_id", "form", "line")
    list_filter = ("dataset", "form")


@admin.register(Instance)
class InstanceAdmin(admin.ModelAdmin):
    list_display = ("dataset", "ordinal", "pronoun", "name", "correct_form")
    list_filter = ("dataset", "pronoun")
    search_fields = ("text",)


class JobChunkInline(admin.TabularInline):
    model = JobChunk
    extra = 0
    fields = ("index", "attempts", "finished_at")
    readonly_fields = fields
    can_delete = False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "model", "dataset", "status", "done_instances", "total_instances", "created_at")
    list_filter = ("status",)
    inlines = [JobChunkInline]

    # The columns keep their titles; the fields count any kind's units (generation: instances).
    @admin.display(description="done instances", ordering="done_units")
    def done_instances(self, job: Job) -> int:
        return job.done_units

    @admin.display(description="total instances", ordering="total_units")
    def total_instances(self, job: Job) -> int:
        return job.total_units
