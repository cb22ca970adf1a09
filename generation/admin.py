from django.contrib import admin

from generation.models import Dataset, Instance, Job, JobChunk, LanguageModel, PronounForm, Template


@admin.register(LanguageModel)
class LanguageModelAdmin(admin.ModelAdmin):
    list_display = ("name", "source_kind", "source", "dtype", "device", "load_in_4bit", "batch_size")


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
