"""The annotation models in Django's admin, read-only: pools, items, assignments and labels change only through
Concord's own commands and pages, which keep their invariants (blinding, one annotation per annotator and item,
assignment order); the admin is for looking things up."""

from django.contrib import admin

from annotation.models import (
    Adjudication,
    Annotation,
    Assignment,
    ExtraneousSpan,
    Participant,
    Pool,
    PoolItem,
    Recruitment,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    show_full_result_count = False  # no second COUNT(*) over large tables

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Pool)
class PoolAdmin(ReadOnlyAdmin):
    list_display = ("name", "per_cell", "seed", "pass_mark", "created_by", "created_at")
    list_select_related = ("created_by",)
    search_fields = ("name",)


@admin.register(PoolItem)
class PoolItemAdmin(ReadOnlyAdmin):
    list_display = ("public_id", "pool", "kind", "model_name", "dataset", "setting", "pronoun", "heuristic_correct")
    list_filter = ("pool", "kind", "dataset", "setting", "pronoun")
    list_select_related = ("pool",)
    search_fields = ("public_id", "continuation")


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = ("pool", "item", "annotator", "position", "annotated", "created_at")
    list_filter = ("pool", "annotated")
    list_select_related = ("pool", "item", "annotator")
    search_fields = ("annotator__username", "item__public_id")


class ExtraneousSpanInline(ReadOnlyInline):
    model = ExtraneousSpan
    fields = ("start", "end")


@admin.register(Annotation)
class AnnotationAdmin(ReadOnlyAdmin):
    list_display = ("item", "annotator", "label", "extraneous", "seconds", "updated_at")
    list_filter = ("label", "extraneous", "item__pool")
    list_select_related = ("item", "annotator")
    search_fields = ("annotator__username", "item__public_id")
    inlines = [ExtraneousSpanInline]


@admin.register(Adjudication)
class AdjudicationAdmin(ReadOnlyAdmin):
    list_display = ("item", "label", "extraneous", "adjudicator", "updated_at")
    list_select_related = ("item", "adjudicator")
    search_fields = ("item__public_id",)


@admin.register(Recruitment)
class RecruitmentAdmin(ReadOnlyAdmin):
    # The link's token is left out: the pool page shows the link to researchers.
    list_display = ("pool", "platform", "is_open", "items_per_person", "max_people", "timeout_minutes", "created_at")
    list_select_related = ("pool",)
    exclude = ("token",)


@admin.register(Participant)
class ParticipantAdmin(ReadOnlyAdmin):
    """With the participants' download, the only place the platform's ids are shown."""

    list_display = ("user", "recruitment", "participant_id", "started_at", "finished_at", "outcome", "code_shown")
    list_filter = ("recruitment__pool", "outcome")
    list_select_related = ("user", "recruitment__pool")
    search_fields = ("participant_id", "user__username")
