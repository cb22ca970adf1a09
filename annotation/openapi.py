"""The OpenAPI account of annotation's API views, which build their responses by hand: the annotator API
(annotation/apis.py) returns the blinded dicts of `annotation.selectors` as they are (its hot path), and the
annotations' export (annotation/export_apis.py) returns a file. Each view's shapes are declared here
(`common.openapi.declared`), leaving the views' code alone. Imported by annotation/urls.py, so before any schema is
built."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import build_array_type, build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from rest_framework import serializers

from annotation.apis import AnnotateItemApi, AnnotateNextApi, AnnotationSubmitApi, SpansField
from annotation.export_apis import PoolAnnotationsExportApi
from common.openapi import FILE_FORMAT, FILE_RESPONSES, Detail, declared, named


class SpansFieldSchema(OpenApiSerializerFieldExtension):
    target_class = SpansField

    def map_serializer_field(self, auto_schema, direction):
        pair = {"type": "array", "items": build_basic_type(OpenApiTypes.INT), "minItems": 2, "maxItems": 2}
        return {**build_array_type(pair), "description": "character spans [start, end) in the generated text"}


# --- the annotator API (README, "Blinding and the annotator API") ---------------------------------------------------

SavedAnnotation = inline_serializer(
    name="SavedAnnotation",
    allow_null=True,
    help_text="the caller's own saved annotation, if any",
    fields={
        "label": serializers.CharField(),
        "extraneous": serializers.BooleanField(),
        "extraneous_spans": SpansField(),
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
        "extraneous_spans": SpansField(),
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

POOL = OpenApiParameter("pool", str, description="only this pool's items (and place, total and done within it)")

AnnotateNextSchema = declared(
    AnnotateNextApi,
    get=lambda view: {
        "parameters": [POOL],
        "responses": {
            200: AnnotatorItem,
            204: OpenApiResponse(description="every item of the caller's queue is annotated"),
            403: OpenApiResponse(Qualification, description="not an annotator, or failed the training"),
        },
    },
)
AnnotateItemSchema = declared(
    AnnotateItemApi,
    get=lambda view: {
        "parameters": [POOL],
        "responses": {
            200: AnnotatorItem,
            403: Qualification,
            404: OpenApiResponse(Detail, description="unknown, or not one of the caller's items"),
        },
    },
)
AnnotationSubmitSchema = declared(
    AnnotationSubmitApi,
    post=lambda view: {
        "request": named(view.InputSerializer, "Annotation"),
        "responses": {
            200: OpenApiResponse(Submitted, description="updated the caller's earlier annotation"),
            201: OpenApiResponse(Submitted, description="saved for the first time"),
            400: OpenApiResponse(Rejected, description="a label, span or tag the item does not allow"),
            403: OpenApiResponse(Rejected, description="not assigned to the caller"),
            404: OpenApiResponse(Rejected, description="no such item"),
        },
    },
)

# --- exports ----------------------------------------------------------------------------------------------------------

PoolAnnotationsExportSchema = declared(
    PoolAnnotationsExportApi, get=lambda view: {"parameters": [FILE_FORMAT], "responses": FILE_RESPONSES}
)
