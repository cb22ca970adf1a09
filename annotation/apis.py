"""The annotator API: next item, one item, save.

Item responses are the dicts built by `annotation.selectors` (its `_payload` is the one place an item becomes
something an annotator can load, which is what blinding rests on). They are returned as they are: these are the API's
hot path, and passing them through an OutputSerializer again cost about 0.15 ms of a 2 ms request. Their shapes are
declared for the schema beside the views (`extend_schema`), from the serializers below that describe them.
"""

from __future__ import annotations

import copy
import re

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import IsAnnotator
from annotation import selectors
from annotation.services import Submitted, annotation_submit
from common.openapi import Detail, named

MAX_SPANS = 500
IDEMPOTENCY_KEY = r"\A[A-Za-z0-9_.:-]+\Z"


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
        "description": "character spans [start, end) in the generated text",
    }
)
class SpansField(serializers.Field):
    """`[[start, end], ...]`, integer pairs; whether they fit the text is the service's check.

    One flat check instead of `ListField(child=ListField(child=IntegerField()))`, whose nested fields DRF deep-copies
    for every request.
    """

    default_error_messages = {
        "invalid": "Expected a list of [start, end] pairs of integers.",
        "max_length": f"Ensure this field has no more than {MAX_SPANS} elements.",
    }

    def to_internal_value(self, data) -> list[tuple[int, int]]:
        if not isinstance(data, list) or not all(
            isinstance(span, list) and len(span) == 2 and all(type(value) is int for value in span) for span in data
        ):
            self.fail("invalid")
        if len(data) > MAX_SPANS:
            self.fail("max_length")
        return [(start, end) for start, end in data]

    def to_representation(self, value) -> list[list[int]]:
        return [[start, end] for start, end in value]


class FlatSerializer(serializers.Serializer):
    """An input serializer whose fields are copied shallowly for each request.

    DRF deep-copies every declared field for each serializer instance, which re-runs each field's constructor: a
    share of a save's Python worth saving (benchmarks/README.md, "Annotation API"). A shallow copy is enough when the fields keep no state between requests (no nested
    serializers, no per-field querysets; a ListField's plain child field is shared, and only read); `bind` then gives
    each copy its name and parent as usual.
    """

    def get_fields(self) -> dict[str, serializers.Field]:
        return {name: copy.copy(field) for name, field in self._declared_fields.items()}


# --- the shapes of the hand-built answers, for the schema (README, "Blinding and the annotator API") -----------------

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
SubmittedAnnotation = inline_serializer(
    name="SubmittedAnnotation",
    fields={
        "item": serializers.CharField(),
        "label": serializers.CharField(),
        "extraneous": serializers.BooleanField(),
        "extraneous_spans": SpansField(),
        "notes": serializers.CharField(allow_blank=True),
        "tags": serializers.ListField(child=serializers.CharField()),
        "feedback": serializers.DictField(
            allow_null=True,
            help_text=(
                "training items only: the expected answer (expected_label, expected_extraneous, explanation), "
                "whether the label matched it (correct) and whether the extraneous flag did (extraneous_correct, "
                "null where the item expects none)"
            ),
        ),
    },
)
Rejected = inline_serializer(
    name="AnnotationRejected", fields={"detail": serializers.CharField(), "field": serializers.CharField()}
)
IdempotencyConflicted = inline_serializer(
    name="IdempotencyConflict",
    fields={
        "detail": serializers.CharField(),
        "field": serializers.CharField(),
        "conflicts": serializers.ListField(child=serializers.CharField(), help_text="the parts that differ"),
    },
)
POOL = OpenApiParameter("pool", str, description="only this pool's items (and place, total and done within it)")


def _saved(submitted: Submitted) -> dict:
    annotation = submitted.annotation
    return {
        "item": submitted.item,
        "label": annotation.label,
        "extraneous": annotation.extraneous,
        "extraneous_spans": [[start, end] for start, end in submitted.spans],
        "notes": annotation.notes,
        "tags": list(annotation.tags),
        "feedback": submitted.feedback,
    }


class AnnotateNextApi(APIView):
    """GET the first item of the caller's queue they have not annotated: 200 with the item, 204 when all are done,
    403 with the qualification when the caller failed the pool's training round. `?pool=NAME` scopes the item and
    its place, total and done count to that pool."""

    permission_classes = [IsAuthenticated, IsAnnotator]  # a list keeps IsAnnotator's message

    @extend_schema(
        parameters=[POOL],
        responses={
            200: AnnotatorItem,
            204: OpenApiResponse(description="every item of the caller's queue is annotated"),
            403: OpenApiResponse(Qualification, description="not an annotator, or failed the training"),
        },
    )
    def get(self, request):
        payload = selectors.assignment_next(user=request.user, pool_name=request.query_params.get("pool") or None)
        if payload is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(payload)


class AnnotateItemApi(APIView):
    """GET one of the caller's own items (to go back and edit), with their saved annotation. `?pool=NAME` places it
    within that pool's part of the queue, as the pool-scoped next does (404 if the item is in another pool)."""

    permission_classes = [IsAuthenticated, IsAnnotator]  # a list keeps IsAnnotator's message

    @extend_schema(
        parameters=[POOL],
        responses={
            200: AnnotatorItem,
            403: Qualification,
            404: OpenApiResponse(Detail, description="unknown, or not one of the caller's items"),
        },
    )
    def get(self, request, public_id: str):
        payload = selectors.assignment_item(
            user=request.user, public_id=public_id, pool_name=request.query_params.get("pool") or None
        )
        if payload is None:
            # Unknown and not-yours look the same, so ids cannot be probed.
            raise NotFound("no such item among yours")
        return Response(payload)


class AnnotationSubmitApi(APIView):
    """POST an annotation: 201 when first saved, 200 when it updates the caller's earlier one. The response's
    `feedback` is null except for training items (the expected answer, and whether the label matched it).

    A save with the idempotency key (`idempotency_key` or the `Idempotency-Key` header) of the save that last wrote
    the annotation is a replay: 200 with what is stored, `Idempotent-Replayed: true`, and nothing written; with a
    different answer (its seconds aside), 422 naming the parts that differ in `conflicts`, and nothing written.
    """

    permission_classes = [IsAuthenticated, IsAnnotator]  # a list keeps IsAnnotator's message

    class InputSerializer(FlatSerializer):
        item = serializers.CharField(max_length=32)
        label = serializers.CharField(max_length=64)
        extraneous = serializers.BooleanField(default=False)
        extraneous_spans = SpansField(default=list)
        notes = serializers.CharField(allow_blank=True, default="", max_length=5000)
        tags = serializers.ListField(child=serializers.CharField(max_length=32), default=list, max_length=20)
        seconds = serializers.FloatField(default=0.0, min_value=0.0)
        # Distractor items: [{start, end, referent}, ...], one per pronoun token the item payload lists.
        referents = serializers.ListField(child=serializers.JSONField(), default=list, max_length=200)
        # Or the `Idempotency-Key` header: the same key on every try of one answer, so a retry changes nothing.
        idempotency_key = serializers.RegexField(IDEMPOTENCY_KEY, max_length=64, required=False, allow_blank=True)

    @extend_schema(
        request=named(InputSerializer, "Annotation"),
        responses={
            200: OpenApiResponse(
                SubmittedAnnotation, description="updated the caller's earlier annotation, or a replay"
            ),
            201: OpenApiResponse(SubmittedAnnotation, description="saved for the first time"),
            400: OpenApiResponse(Rejected, description="a label, span, tag or key the item does not allow"),
            403: OpenApiResponse(Rejected, description="not assigned to the caller, or failed the training round"),
            404: OpenApiResponse(Rejected, description="no such item"),
            409: OpenApiResponse(Rejected, description="a training answer, which cannot change once saved"),
            422: OpenApiResponse(
                IdempotencyConflicted, description="the idempotency key of an earlier save, with a different answer"
            ),
        },
    )
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        header = request.headers.get("Idempotency-Key", "")
        body_key = values.get("idempotency_key", "")
        if header and (len(header) > 64 or not re.fullmatch(IDEMPOTENCY_KEY, header)):
            return Response(
                {"detail": "Idempotency-Key must be 1 to 64 of A-Z a-z 0-9 - _ . :", "field": "idempotency_key"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        if header and body_key and header != body_key:
            return Response(
                {"detail": "the Idempotency-Key header and idempotency_key differ", "field": "idempotency_key"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        submitted = annotation_submit(
            user=request.user,
            public_id=values["item"],
            label=values["label"],
            extraneous=values["extraneous"],
            spans=values["extraneous_spans"],
            notes=values["notes"],
            tags=values["tags"],
            seconds=values["seconds"],
            idempotency_key=body_key or header,
            referents=values["referents"],
        )
        response = Response(
            _saved(submitted), status=status.HTTP_201_CREATED if submitted.created else status.HTTP_200_OK
        )
        if submitted.replayed:
            response["Idempotent-Replayed"] = "true"
        return response
