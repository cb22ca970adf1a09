"""The OpenAPI schema's account of the API views that build their responses by hand (no serializer to read).

`GET /api/schema/` (drf-spectacular) reads request and response shapes from serializers. The annotator API returns
the blinded dicts of `annotation.selectors` as they are (its hot path), the reports return files, and some views
validate with an inner `InputSerializer`: for each such view, an extension here declares its shapes with
`@extend_schema`, leaving the view's own code alone. A view without a declaration makes
`manage.py spectacular --validate --fail-on-warn` fail (tests/test_api_schema.py): add one here.

Loaded by config/urls.py, before any schema is generated.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerFieldExtension, OpenApiViewExtension
from drf_spectacular.plumbing import build_array_type, build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from rest_framework import serializers

from common.openapi import FILE, Detail, FieldErrors
from common.openapi import declared as _declared  # the name these declarations used before it moved to common/


class Spans(serializers.Field):
    """`[[start, end], ...]` in responses; documented as `annotation.apis.SpansField` is (below)."""


# --- the annotator API (README, "Blinding and the annotator API") ---------------------------------------------------

SavedAnnotation = inline_serializer(
    name="SavedAnnotation",
    allow_null=True,
    help_text="the caller's own saved annotation, if any",
    fields={
        "label": serializers.CharField(),
        "extraneous": serializers.BooleanField(),
        "extraneous_spans": Spans(),
        "notes": serializers.CharField(allow_blank=True),
        "tags": serializers.ListField(child=serializers.CharField()),
    },
)
AnnotatorItem = inline_serializer(
    name="AnnotatorItem",
    fields={
        "item": serializers.CharField(help_text="the item's opaque id"),
        "context": serializers.CharField(),
        "generation": serializers.CharField(help_text="the model's continuation, shown apart from the context"),
        "phase": serializers.ChoiceField(choices=["training", "study"]),
        "position": serializers.IntegerField(help_text="1-based place in the caller's queue (or the pool's part)"),
        "total": serializers.IntegerField(),
        "done": serializers.IntegerField(),
        "labels": serializers.ListField(child=serializers.CharField(), help_text="the pool's label set"),
        "previous": serializers.CharField(allow_null=True, help_text="id of the item before, for going back"),
        "next": serializers.CharField(allow_null=True),
        "annotation": SavedAnnotation,
    },
)
Qualification = inline_serializer(
    name="QualificationClosed",
    fields={
        "detail": serializers.CharField(),
        "qualification": inline_serializer(
            name="Qualification",
            fields={
                "status": serializers.ChoiceField(choices=["not_required", "in_progress", "passed", "failed"]),
                "correct": serializers.IntegerField(),
                "total": serializers.IntegerField(),
                "score": serializers.FloatField(allow_null=True),
                "pass_mark": serializers.FloatField(),
            },
        ),
    },
)
Submitted = inline_serializer(
    name="SubmittedAnnotation",
    fields={
        "item": serializers.CharField(),
        "label": serializers.CharField(),
        "extraneous": serializers.BooleanField(),
        "extraneous_spans": Spans(),
        "notes": serializers.CharField(allow_blank=True),
        "tags": serializers.ListField(child=serializers.CharField()),
        "feedback": serializers.DictField(
            allow_null=True, help_text="training items only: the expected answer and whether the label matched it"
        ),
    },
)
Rejected = inline_serializer(
    name="AnnotationRejected", fields={"detail": serializers.CharField(), "field": serializers.CharField()}
)


def _named(serializer: type, name: str) -> type:
    """The same serializer under its own component name (the views' inner classes are all `InputSerializer`)."""
    return type(f"{name}Serializer", (serializer,), {"__module__": serializer.__module__})


POOL = OpenApiParameter("pool", str, description="only this pool's items (and place, total and done within it)")


class SpansFieldSchema(OpenApiSerializerFieldExtension):
    target_class = "annotation.apis.SpansField"

    def map_serializer_field(self, auto_schema, direction):
        pair = {"type": "array", "items": build_basic_type(OpenApiTypes.INT), "minItems": 2, "maxItems": 2}
        return {**build_array_type(pair), "description": "character spans [start, end) in the generated text"}


AnnotateNextSchema = _declared(
    "annotation.apis.AnnotateNextApi",
    get=lambda view: {
        "parameters": [POOL],
        "responses": {
            200: AnnotatorItem,
            204: OpenApiResponse(description="every item of the caller's queue is annotated"),
            403: OpenApiResponse(Qualification, description="not an annotator, or failed the training"),
        },
    },
)
AnnotateItemSchema = _declared(
    "annotation.apis.AnnotateItemApi",
    get=lambda view: {
        "parameters": [POOL],
        "responses": {
            200: AnnotatorItem,
            403: Qualification,
            404: OpenApiResponse(Detail, description="unknown, or not one of the caller's items"),
        },
    },
)
AnnotationSubmitSchema = _declared(
    "annotation.apis.AnnotationSubmitApi",
    post=lambda view: {
        "request": _named(view.InputSerializer, "Annotation"),
        "responses": {
            200: OpenApiResponse(Submitted, description="updated the caller's earlier annotation"),
            201: OpenApiResponse(Submitted, description="saved for the first time"),
            400: OpenApiResponse(Rejected, description="a label, span or tag the item does not allow"),
            403: OpenApiResponse(Rejected, description="not assigned to the caller"),
            404: OpenApiResponse(Rejected, description="no such item"),
        },
    },
)


# --- generation jobs ------------------------------------------------------------------------------------------------


def _job_output():
    from generation.apis import JobOutputSerializer

    return JobOutputSerializer


JobListCreateSchema = _declared(
    "generation.apis.JobListCreateApi",
    get=lambda view: {"operation_id": "generation_jobs_list", "responses": {200: _job_output()(many=True)}},
    post=lambda view: {
        "description": "Queue a job (admins).",
        "request": _named(view.InputSerializer, "JobParameters"),
        "responses": {201: _job_output(), 400: FieldErrors},
    },
)
JobDetailSchema = _declared(
    "generation.apis.JobDetailApi", get=lambda view: {"responses": {200: _job_output(), 404: Detail}}
)


def _job_action(target: str, what: str) -> type[OpenApiViewExtension]:
    return _declared(
        target,
        post=lambda view: {
            "description": f"{what} (admins).",
            "request": None,
            "responses": {200: _job_output(), 404: Detail, 409: OpenApiResponse(Detail, "not in a state to")},
        },
    )


JobCancelSchema = _job_action("generation.apis.JobCancelApi", "Cancel a queued or running job")
JobResumeSchema = _job_action("generation.apis.JobResumeApi", "Resume a failed or cancelled job")


# --- reports and exports --------------------------------------------------------------------------------------------

# The report's and the quality dashboard's declarations sit beside their views, built from the report's types:
# analysis/openapi.py.


PoolAnnotationsExportSchema = _declared(
    "annotation.export_apis.PoolAnnotationsExportApi",
    get=lambda view: {
        "parameters": [OpenApiParameter("format", str, enum=["csv", "jsonl"], description="default csv")],
        "responses": {(200, "text/csv"): FILE, (200, "application/jsonl"): FILE, (404, "text/csv"): Detail},
    },
)


class SpansSchema(SpansFieldSchema):
    target_class = "config.openapi.Spans"


# --- judges (machine raters) ----------------------------------------------------------------------------------------


def _judge_run_output():
    from judging.apis import RunSerializer

    return RunSerializer


PoolJudgeRunsSchema = _declared(
    "judging.apis.PoolJudgeRunsApi",
    get=lambda view: {"responses": {200: _judge_run_output()(many=True), 404: Detail}},
)
JudgeRunLabelsSchema = _declared(
    "judging.apis.JudgeRunLabelsApi",
    get=lambda view: {
        "description": "One row per item: item, origin, label, confidence, prompt (the exact text scored), options "
        "(JSON: label -> option text) and score_<label> per option.",
        "parameters": [OpenApiParameter("format", str, enum=["csv", "jsonl"], description="default csv")],
        "responses": {(200, "text/csv"): FILE, (200, "application/jsonl"): FILE, (404, "text/csv"): Detail},
    },
)
